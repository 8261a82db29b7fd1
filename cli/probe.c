/* SPDX-License-Identifier: MIT */
/*
 * sluice probe [OPTION...] [TARGET...]
 *
 * Tries, from wherever it runs, every way out of a sandbox that sluice is
 * meant to close, and prints one line per attempt: `blocked`, `ESCAPED` or
 * `skipped`, with what answered or the error the kernel gave. It is meant
 * to run inside one (`sluice run --policy P -- sluice probe`) and its output
 * is the report a person attaches to a review; run outside a sandbox, it
 * reports ESCAPED, which is how its own test shows that it can fail.
 *
 * Each TARGET is asked for through the proxy and reported `allowed` or
 * `denied`: an operator's "can I reach X?", not an escape.
 *
 * Exit: 0 nothing escaped, 1 something did, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "macro.h"
#include "probe.h"

/* The whole run is bounded: a probe that would wait past this is skipped
 * and says so, so a fence that drops silently cannot make it hang. */
#define PROBE_BUDGET_MS 14000
#define PROBE_TIMEOUT_MS 1000

/* Something got out. (Not SL_EXIT_INVALID, which happens to be 1 too.) */
#define PROBE_EXIT_ESCAPED 1

static const char *const result_word[] = {
	[SL_PROBE_BLOCKED] = "blocked",
	[SL_PROBE_ESCAPED] = "ESCAPED",
	[SL_PROBE_SKIPPED] = "skipped",
	[SL_PROBE_ALLOWED] = "allowed",
	[SL_PROBE_DENIED] = "denied",
};

uint64_t sl_probe_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int sl_probe_wait_ms(const struct sl_probe *p, int want)
{
	uint64_t now = sl_probe_now_ms();

	if (now >= p->deadline)
		return 0;
	if (p->deadline - now < (uint64_t)want)
		return (int)(p->deadline - now);
	return want;
}

void sl_probe_report(struct sl_probe *p, enum sl_probe_result r, const char *kind,
		     const char *target, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* What a probe prints can come from outside (a socket's path, a
	 * server's answer): no control characters reach the terminal. */
	for (char *c = detail; *c; c++)
		if (*c == '\t')
			*c = ' ';
		else if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	printf("%-8s %-13s %-30s %s\n", result_word[r], kind, target, detail);
	fflush(stdout);
	p->counts[r]++;
}

bool sl_probe_wanted(const struct sl_probe *p, const char *kind)
{
	if (!p->only)
		return true;
	for (size_t i = 0; i < p->n_only; i++)
		if (!strcmp(p->only[i], kind))
			return true;
	return false;
}

void sl_probe_fmt_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		port = ntohs(in->sin_port);
		if (port)
			snprintf(buf, len, "%s:%u", a, port);
		else
			snprintf(buf, len, "%s", a);
		return;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		port = ntohs(in6->sin6_port);
		if (port)
			snprintf(buf, len, "[%s]:%u", a, port);
		else
			snprintf(buf, len, "%s", a);
		return;
	}
	snprintf(buf, len, "(family %d)", sa->sa_family);
}

static void usage(FILE *f)
{
	fputs("usage: sluice probe [--outside ADDR]... [--outside-pid PID] [--allow-write PATH]...\n"
	      "                    [--secret-file PATH]... [--denied-name NAME] [--timeout MS]\n"
	      "                    [--only KIND[,KIND...]] [TARGET...]\n"
	      "\n"
	      "Run inside a sandbox (sluice run --policy P -- sluice probe): tries every way out\n"
	      "and prints one line per attempt, `blocked`, `ESCAPED` or `skipped`, with what it\n"
	      "got. Exit 0 when nothing escaped, 1 when something did, 2 on a usage error.\n"
	      "\n"
	      "options:\n"
	      "  --outside ADDR       the outside host, an IPv4 or an IPv6 address (one of each;\n"
	      "                       default 203.0.113.99 and 2001:db8::99, TEST-NET): it must be\n"
	      "                       one the policy does not allow\n"
	      "  --outside-pid PID    a process outside the sandbox, for kill, ptrace and environ\n"
	      "  --allow-write PATH   a path meant to be writable (a --rw bind): not an escape\n"
	      "  --secret-file PATH   a file the sandbox must not read (a policy's secret)\n"
	      "  --denied-name NAME   a name that exists but the policy denies (default example.com)\n"
	      "  --timeout MS         each wait for an answer (default 1000; TARGETs get 3x)\n"
	      "  --only KIND,...      run only these probes (TARGETs are always asked for)\n"
	      "\n"
	      "TARGET: HOST[:PORT] or http://HOST[:PORT][/PATH] or https://HOST[:PORT]: asked for\n"
	      "through HTTP_PROXY (CONNECT, or an absolute-form GET for http:// and port 80) and\n"
	      "reported `allowed` (with the status) or `denied` (with sluice's reason); a TARGET\n"
	      "is the operator's question, not an escape, and never changes the exit status.\n"
	      "\n"
	      "probes (KIND: what it tries; what counts as ESCAPED):\n"
	      "  tcp4, tcp6     connect to the outside host (:80, :443, :22; and 198.51.100.99:80),\n"
	      "                 then send an HTTP request: connected and answered by anything but\n"
	      "                 sluice's own refusal (a captured connection gets a 403 `sluice:`)\n"
	      "  metadata       the same to 169.254.169.254:80; and through the proxy: not a 403\n"
	      "  host-port      the host end's other ports (22, 25, 80, 443, 2222, 5432, 6379,\n"
	      "                 8080): connected; the gateway's own 53, 3128, 3129 are not tried\n"
	      "  udp4, udp6     a datagram to the outside host :9999: an ICMP error from anything\n"
	      "                 but this host or the host end (it left), or nothing at all\n"
	      "  icmp4, icmp6   an echo request (ping socket, or raw as root): a reply, or silence\n"
	      "  dns-foreign    a query for --denied-name to resolvers that are not the gateway\n"
	      "                 (the outside host and 198.51.100.99 over UDP, the outside host\n"
	      "                 over TCP): an answer with records, or silence, or a TCP close\n"
	      "                 without an answer (the query left); NXDOMAIN/REFUSED is sluice's\n"
	      "                 refusal\n"
	      "  dns-denied     the same query to resolv.conf's nameserver: an answer with records\n"
	      "  raw4, raw6     socket(SOCK_RAW, IPPROTO_RAW) opens: it could forge any packet\n"
	      "  packet         socket(AF_PACKET, SOCK_RAW) opens: frames no inet hook sees\n"
	      "  unix           the host's filesystem sockets (D-Bus, systemd, journald, resolved,\n"
	      "                 nscd, docker, containerd, podman, X11; a bounded scan of /run,\n"
	      "                 /var/run, /tmp, /var/tmp, /dev/shm): one that connects\n"
	      "  unix-abstract  abstract sockets in /proc/net/unix (the network namespace's): one\n"
	      "                 that connects\n"
	      "  fs-write       create and remove a file in /etc, /usr, /usr/local/bin, /var/lib,\n"
	      "                 /root, /home, /opt, /srv, $HOME's parent and the working\n"
	      "                 directory, unless under --allow-write: it was created\n"
	      "  fs-tmp         /tmp, /var/tmp, /dev/shm hold entries of other users: shared\n"
	      "  fs-read        read /etc/shadow, /etc/gshadow, /etc/sudoers, /root and each\n"
	      "                 --secret-file: it could be read\n"
	      "  pid-ns         the pid namespace and /proc: the machine's pid namespace, or a\n"
	      "                 /proc of another one\n"
	      "  kill           kill(--outside-pid, 0): delivered\n"
	      "  ptrace         PTRACE_SEIZE of --outside-pid (from a child that exits at once, so\n"
	      "                 the process is never stopped): attached\n"
	      "  environ        read /proc/PID/environ of --outside-pid: read\n"
	      "  tty            TIOCSTI (one NUL byte, flushed at once) into the controlling\n"
	      "                 terminal when it is not the sandbox's own (or, with none, into a\n"
	      "                 terminal among fds 0-2): injected\n"
	      "  privs          uid 0, or any effective, permitted or ambient capability\n"
	      "  setuid         no_new_privs is off: a setuid binary would raise privileges\n"
	      "  nft            add (then delete) table inet sluice-probe-PID: added\n"
	      "  route          add (then delete) 198.51.100.123/32 dev lo: added\n"
	      "  sysctl         open /proc/sys/net/ipv4/ip_forward for writing (nothing written)\n"
	      "  cgroup         open the root cgroup's cgroup.procs for writing (nothing written)\n"
	      "  target         each TARGET through the proxy: allowed or denied (informational)\n"
	      "\n"
	      "See docs/probe.md.\n",
	      f);
}

/* Every KIND, for --only. */
static const char *const kinds[] = {
	"tcp4", "tcp6", "metadata", "host-port", "udp4", "udp6", "icmp4", "icmp6",
	"dns-foreign", "dns-denied", "raw4", "raw6", "packet", "unix", "unix-abstract",
	"fs-write", "fs-tmp", "fs-read", "pid-ns", "kill", "ptrace", "environ", "tty",
	"privs", "setuid", "nft", "route", "sysctl", "cgroup",
};

static bool known_kind(const char *k)
{
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
		if (!strcmp(kinds[i], k))
			return true;
	return false;
}

static int add_str(char ***v, size_t *n, const char *s)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(**v));

	if (!grown)
		return -ENOMEM;
	*v = grown;
	(*v)[(*n)++] = (char *)s;
	return 0;
}

/* --only tcp4,udp4: split in place (the string is argv's). */
static int add_only(struct sl_probe *p, char *list)
{
	char *save = NULL;

	for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (!known_kind(k)) {
			fprintf(stderr, "sluice probe: --only %s: no such probe (see --help)\n", k);
			return -EINVAL;
		}
		if (add_str(&p->only, &p->n_only, k) < 0)
			return -ENOMEM;
	}
	return p->n_only ? 0 : -EINVAL;
}

/* An --outside of one family replaces that family's default (the other's
 * stays); a later one of the same family replaces the earlier. */
static int parse_outside(struct sl_probe *p, const char *s)
{
	if (inet_pton(AF_INET, s, &p->outside4) == 1)
		return 0;
	if (inet_pton(AF_INET6, s, &p->outside6) == 1)
		return 0;
	return -EINVAL;
}

static int parse_int(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_args(struct sl_probe *p, int argc, char **argv)
{
	enum { OPT_OUTSIDE = 256, OPT_PID, OPT_RW, OPT_SECRET, OPT_NAME, OPT_TIMEOUT, OPT_ONLY };
	static const struct option opts[] = {
		{ "outside", required_argument, NULL, OPT_OUTSIDE },
		{ "outside-pid", required_argument, NULL, OPT_PID },
		{ "allow-write", required_argument, NULL, OPT_RW },
		{ "secret-file", required_argument, NULL, OPT_SECRET },
		{ "denied-name", required_argument, NULL, OPT_NAME },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_OUTSIDE:
			if (parse_outside(p, optarg) < 0) {
				fprintf(stderr, "sluice probe: --outside %s: not an IPv4 or IPv6 address\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_PID:
			if (parse_int(optarg, 1, INT_MAX, &v) < 0) {
				fprintf(stderr, "sluice probe: --outside-pid %s: not a pid\n", optarg);
				return -EINVAL;
			}
			p->outside_pid = (pid_t)v;
			break;
		case OPT_RW:
			if (optarg[0] != '/') {
				fprintf(stderr, "sluice probe: --allow-write %s: not an absolute path\n",
					optarg);
				return -EINVAL;
			}
			if (add_str(&p->allow_write, &p->n_allow_write, optarg) < 0)
				return -ENOMEM;
			break;
		case OPT_SECRET:
			if (add_str(&p->secret_files, &p->n_secret_files, optarg) < 0)
				return -ENOMEM;
			break;
		case OPT_NAME:
			if (!sl_probe_dns_name_ok(optarg)) {
				fprintf(stderr, "sluice probe: --denied-name %s: not a DNS name\n",
					optarg);
				return -EINVAL;
			}
			p->denied_name = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_int(optarg, 10, 5000, &v) < 0) {
				fprintf(stderr, "sluice probe: --timeout %s: milliseconds, 10 to 5000\n",
					optarg);
				return -EINVAL;
			}
			p->timeout_ms = (int)v;
			break;
		case OPT_ONLY:
			if (add_only(p, optarg) < 0) {
				if (!p->n_only)
					fprintf(stderr, "sluice probe: --only needs a list of probes\n");
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	p->targets = argv + optind;
	p->n_targets = (size_t)(argc - optind);
	if (p->n_targets > SL_PROBE_MAX_TARGETS) {
		fprintf(stderr, "sluice probe: at most %d targets\n", SL_PROBE_MAX_TARGETS);
		return -EINVAL;
	}
	return 0;
}

/* HTTP_PROXY=http://10.231.0.1:3128 as sluice run sets it. Only a numeric
 * address: resolving a name here would be a DNS query of its own. */
static void find_proxy(struct sl_probe *p)
{
	static const char *const vars[] = { "HTTP_PROXY", "http_proxy", "HTTPS_PROXY",
					    "https_proxy" };
	char host[INET6_ADDRSTRLEN + 2], *colon;
	const char *v = NULL, *h;
	long port;
	size_t n;

	for (size_t i = 0; i < ELEMENTSOF(vars) && !v; i++)
		if ((v = getenv(vars[i])) && !*v)
			v = NULL;
	if (!v)
		return;
	h = strncmp(v, "http://", 7) ? v : v + 7;
	n = strcspn(h, "/");
	if (n >= sizeof(host))
		return;
	memcpy(host, h, n);
	host[n] = '\0';
	colon = strrchr(host, ':');
	if (!colon || parse_int(colon + 1, 1, 65535, &port) < 0)
		return;
	*colon = '\0';
	if (host[0] == '[' && colon > host && colon[-1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&p->proxy;

		colon[-1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			return;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		p->proxy_len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&p->proxy;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		p->proxy_len = sizeof(*in);
		p->host_end = in->sin_addr;
		p->have_host_end = true;
	}
}

/* Without a proxy, the host end is the default route's gateway
 * (/proc/net/route: hex, in network byte order). */
static void find_default_gateway(struct sl_probe *p)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/net/route", "re");
	char line[256];

	if (!f)
		return;
	for (int i = 0; i < 64 && fgets(line, sizeof(line), f); i++) {
		unsigned dst, gw, flags;

		if (sscanf(line, "%*s %x %x %x", &dst, &gw, &flags) == 3 && dst == 0 &&
		    (flags & 0x2) /* RTF_GATEWAY */) {
			p->host_end.s_addr = gw;
			p->have_host_end = true;
			return;
		}
	}
}

static void print_context(const struct sl_probe *p)
{
	char proxy[64] = "none", end[INET_ADDRSTRLEN] = "unknown";
	char o4[INET_ADDRSTRLEN], o6[INET6_ADDRSTRLEN];

	if (p->proxy_len)
		sl_probe_fmt_addr((const struct sockaddr *)&p->proxy, proxy, sizeof(proxy));
	if (p->have_host_end)
		inet_ntop(AF_INET, &p->host_end, end, sizeof(end));
	inet_ntop(AF_INET, &p->outside4, o4, sizeof(o4));
	inet_ntop(AF_INET6, &p->outside6, o6, sizeof(o6));
	printf("# sluice probe: uid %u gid %u pid %d; proxy %s; host end %s; outside %s %s\n",
	       (unsigned)getuid(), (unsigned)getgid(), (int)getpid(), proxy, end, o4, o6);
	fflush(stdout);
}

int sl_cmd_probe(int argc, char **argv)
{
	struct sl_probe p = {
		.denied_name = "example.com",
		.timeout_ms = PROBE_TIMEOUT_MS,
	};
	int r, ret;

	inet_pton(AF_INET, "203.0.113.99", &p.outside4);
	inet_pton(AF_INET6, "2001:db8::99", &p.outside6);
	r = parse_args(&p, argc, argv);
	if (r != 0) {
		ret = r > 0 ? SL_EXIT_OK : SL_EXIT_USAGE;
		goto out;
	}
	find_proxy(&p);
	if (!p.have_host_end)
		find_default_gateway(&p);
	p.deadline = sl_probe_now_ms() + PROBE_BUDGET_MS;

	print_context(&p);
	sl_probe_net(&p);
	sl_probe_sockets(&p);
	sl_probe_files(&p);
	sl_probe_procs(&p);
	sl_probe_kernel(&p);

	printf("sluice probe: %u blocked, %u escaped, %u skipped", p.counts[SL_PROBE_BLOCKED],
	       p.counts[SL_PROBE_ESCAPED], p.counts[SL_PROBE_SKIPPED]);
	if (p.n_targets)
		printf("; targets: %u allowed, %u denied", p.counts[SL_PROBE_ALLOWED],
		       p.counts[SL_PROBE_DENIED]);
	printf("\n");
	fflush(stdout);
	ret = p.counts[SL_PROBE_ESCAPED] ? PROBE_EXIT_ESCAPED : SL_EXIT_OK;
out:
	free(p.allow_write);
	free(p.secret_files);
	free(p.only);
	return ret;
}
