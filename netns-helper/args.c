/* SPDX-License-Identifier: MIT */
/*
 * The pure parts: address pool arithmetic, sizes, `sluice run` arguments.
 * No I/O here, so the unit tests cover all of it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "netns.h"
#include "util.h"

int sl_netns_pool_parse(const char *s, struct sl_netns_pool *ret)
{
	char buf[INET_ADDRSTRLEN + 4];
	struct in_addr a;
	const char *slash;
	uint64_t prefix;
	uint32_t base, mask;

	slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= INET_ADDRSTRLEN)
		return -EINVAL;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	/* A pool smaller than one /30 holds no sandbox; one larger than a /8
	 * is a typo that would swallow someone else's network. */
	if (sl_netns_parse_uint(slash + 1, 8, 30, &prefix) < 0)
		return -EINVAL;
	base = ntohl(a.s_addr);
	mask = ~0u << (32 - prefix);
	if (base & ~mask)
		return -EINVAL;
	ret->base = base;
	ret->prefix = (unsigned)prefix;
	return 0;
}

uint32_t sl_netns_pool_slots(const struct sl_netns_pool *pool)
{
	return 1u << (30 - pool->prefix);
}

int sl_netns_pool_slot(const struct sl_netns_pool *pool, uint32_t i, struct in_addr *ret_host,
		       struct in_addr *ret_peer)
{
	uint32_t net;

	if (i >= sl_netns_pool_slots(pool))
		return -ERANGE;
	net = pool->base + 4 * i;
	ret_host->s_addr = htonl(net + 1);
	ret_peer->s_addr = htonl(net + 2);
	return 0;
}

int sl_netns_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int sl_netns_parse_size(const char *s, uint64_t *ret)
{
	static const char units[] = "KMGT";
	char digits[24];
	const char *p = s, *u;
	uint64_t v;
	unsigned shift = 0;
	int r;

	while (isdigit((unsigned char)*p))
		p++;
	if (p == s || (size_t)(p - s) >= sizeof(digits))
		return p == s ? -EINVAL : -ERANGE;
	memcpy(digits, s, (size_t)(p - s));
	digits[p - s] = '\0';
	r = sl_netns_parse_uint(digits, 0, UINT64_MAX, &v);
	if (r < 0)
		return r;
	if (*p) {
		u = strchr(units, toupper((unsigned char)*p));
		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		p++;
		if (!strcasecmp(p, "ib"))
			p += 2;
		else if (!strcasecmp(p, "b"))
			p += 1;
		if (*p)
			return -EINVAL;
	}
	if (v == 0 || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int sl_netns_parse_percent(const char *s, unsigned *ret)
{
	char buf[16];
	size_t len = strlen(s);
	uint64_t v;
	int r;

	if (len && s[len - 1] == '%')
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	r = sl_netns_parse_uint(buf, 1, 100 * 1024, &v);
	if (r < 0)
		return r;
	*ret = (unsigned)v;
	return 0;
}

/* Options that take a value, and where it goes. */
enum opt {
	OPT_POLICY,
	OPT_USER,
	OPT_AUDIT,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPU,
	OPT_RESOLVER,
	OPT_UPSTREAM_CA,
	OPT_POOL,
	OPT_RW,
	OPT_RO,
	OPT_TRUST,
	OPT_ENV,
	OPT_METRICS,
	_OPT_MAX,
};

static const char *const opt_names[_OPT_MAX] = {
    [OPT_POLICY] = "--policy",	   [OPT_USER] = "--user",
    [OPT_AUDIT] = "--audit",	   [OPT_MEMORY] = "--memory",
    [OPT_PIDS] = "--pids",	   [OPT_CPU] = "--cpu",
    [OPT_RESOLVER] = "--resolver", [OPT_UPSTREAM_CA] = "--upstream-ca",
    [OPT_POOL] = "--pool",	   [OPT_RW] = "--rw",
    [OPT_RO] = "--ro",		   [OPT_TRUST] = "--trust",
    [OPT_ENV] = "--env",
    [OPT_METRICS] = "--metrics",
};


static int find_opt(const char *arg, const char **ret_value)
{
	for (int i = 0; i < _OPT_MAX; i++) {
		size_t n = strlen(opt_names[i]);

		if (strncmp(arg, opt_names[i], n))
			continue;
		if (arg[n] == '\0') {
			*ret_value = NULL;
			return i;
		}
		if (arg[n] == '=') {
			*ret_value = arg + n + 1;
			return i;
		}
	}
	return -1;
}

static int set_opt(struct sl_netns_run_args *a, enum opt o, const char *v, char *err, size_t errlen)
{
	const char **slot = NULL;
	uint64_t n;
	int r;

	switch (o) {
	case OPT_POLICY:
		slot = &a->policy;
		break;
	case OPT_USER:
		slot = &a->user;
		break;
	case OPT_RESOLVER:
		slot = &a->resolver;
		break;
	case OPT_UPSTREAM_CA:
		slot = &a->upstream_ca;
		break;
	case OPT_METRICS:
		slot = &a->metrics;
		break;
	case OPT_POOL:
		if (sl_netns_pool_parse(v, &(struct sl_netns_pool){0}) < 0)
			return sl_err(err, errlen, -EINVAL,
				      "--pool '%s': expected an IPv4 network A.B.C.D/P, P in 8..30",
				      v);
		slot = &a->pool;
		break;
	case OPT_RW:
	case OPT_RO:
		if (a->n_binds >= SL_NETNS_MAX_BINDS)
			return sl_err(err, errlen, -E2BIG, "%s %s: at most %d --rw and --ro in all",
				      opt_names[o], v, SL_NETNS_MAX_BINDS);
		a->binds[a->n_binds++] = (struct sl_netns_bind){.path = v, .writable = o == OPT_RW};
		return 0;
	case OPT_TRUST:
		if (a->n_trust >= SL_NETNS_MAX_TRUST)
			return sl_err(err, errlen, -E2BIG, "--trust %s: at most %d files", v,
				      SL_NETNS_MAX_TRUST);
		a->trust[a->n_trust++] = v;
		return 0;
	case OPT_ENV:
		r = sl_netns_env_extra_check(v);
		if (r == -EPERM)
			return sl_err(err, errlen, r,
				      "--env '%s': sluice sets the proxy variables itself (the gateway "
				      "is the sandbox's only way out)",
				      v);
		if (r < 0)
			return sl_err(err, errlen, r,
				      "--env '%s': expected NAME or NAME=VALUE, NAME made of letters, "
				      "digits and _",
				      v);
		if (a->n_env >= SL_NETNS_MAX_ENV)
			return sl_err(err, errlen, -E2BIG, "--env %s: at most %d", v,
				      SL_NETNS_MAX_ENV);
		a->env[a->n_env++] = v;
		return 0;
	case OPT_AUDIT:
		/* The command writes to the same stdout: a line it prints
		 * would read as the gateway's. */
		if (!strcmp(v, "-"))
			return sl_err(err, errlen, -EINVAL,
				      "--audit -: the command shares this stdout and could print "
				      "records that look like sluice's; give a file (--audit FILE, "
				      "or --audit /dev/fd/3 3>FILE)");
		slot = &a->audit;
		break;
	case OPT_MEMORY:
		if (a->limits.memory_bytes)
			break;
		if (sl_netns_parse_size(v, &a->limits.memory_bytes) < 0)
			return sl_err(err, errlen, -EINVAL,
				      "--memory '%s': expected a size such as 512M or 2G", v);
		return 0;
	case OPT_PIDS:
		if (a->limits.pids)
			break;
		if (sl_netns_parse_uint(v, 1, 4194304, &n) < 0)
			return sl_err(err, errlen, -EINVAL,
				      "--pids '%s': expected a number of processes, 1..4194304", v);
		a->limits.pids = n;
		return 0;
	case OPT_CPU:
		if (a->limits.cpu_percent)
			break;
		if (sl_netns_parse_percent(v, &a->limits.cpu_percent) < 0)
			return sl_err(err, errlen, -EINVAL,
				      "--cpu '%s': expected a percentage of one CPU, 1..102400", v);
		return 0;
	case _OPT_MAX:
		return -EINVAL;
	}
	if (slot && !*slot) {
		*slot = v;
		return 0;
	}
	return sl_err(err, errlen, -EINVAL, "%s given twice", opt_names[o]);
}

int sl_netns_run_args_parse(int argc, char **argv, struct sl_netns_run_args *ret, char *err,
			    size_t errlen)
{
	struct sl_netns_run_args a = {0};
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *v;
		int o;

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			*ret = (struct sl_netns_run_args){.help = true};
			return 0;
		}
		if (arg[0] != '-')
			break; /* the command starts here */
		if (!strcmp(arg, "--observe")) { /* the one flag without a value */
			a.observe = true;
			continue;
		}
		o = find_opt(arg, &v);
		if (o < 0)
			return sl_err(err, errlen, -EINVAL, "unknown option '%s'", arg);
		if (!v) {
			if (i + 1 >= argc)
				return sl_err(err, errlen, -EINVAL, "%s needs a value", arg);
			v = argv[++i];
		}
		if (!*v)
			return sl_err(err, errlen, -EINVAL, "%s: empty value", opt_names[o]);
		r = set_opt(&a, (enum opt)o, v, err, errlen);
		if (r < 0)
			return r;
	}
	if (i >= argc)
		return sl_err(err, errlen, -EINVAL,
			      "no command given (sluice run [OPTION...] -- CMD [ARG...])");
	a.argv = argv + i;
	*ret = a;
	return 0;
}
