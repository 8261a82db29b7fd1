/* SPDX-License-Identifier: MIT */
/*
 * Who the command runs as, and the environment it gets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netns.h"
#include "util.h"

static void fill_from_passwd(struct sl_netns_user *u, const struct passwd *pw)
{
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir);
}

static int user_from_uid(uid_t uid, gid_t gid, bool gid_given, struct sl_netns_user *ret)
{
	struct sl_netns_user u = {.uid = uid, .gid = gid};
	struct passwd *pw;

	errno = 0;
	pw = getpwuid(uid);
	if (pw) {
		fill_from_passwd(&u, pw);
		if (!gid_given)
			u.gid = pw->pw_gid;
	}
	*ret = u;
	return 0;
}

int sl_netns_user_resolve(const char *spec, struct sl_netns_user *ret, char *err, size_t errlen)
{
	struct sl_netns_user u;
	uint64_t uid, gid;
	struct passwd *pw;
	const char *su, *sg;

	if (!spec) {
		/* Through sudo, the agent runs as the user who asked for it. */
		su = getenv("SUDO_UID");
		sg = getenv("SUDO_GID");
		if (su && sl_netns_parse_uint(su, 1, UINT32_MAX - 1, &uid) == 0) {
			if (!sg || sl_netns_parse_uint(sg, 0, UINT32_MAX - 1, &gid) < 0)
				gid = uid;
			user_from_uid((uid_t)uid, (gid_t)gid, true, &u);
			goto check;
		}
		spec = "nobody";
	}
	if (sl_netns_parse_uint(spec, 0, UINT32_MAX - 1, &uid) == 0) {
		user_from_uid((uid_t)uid, (gid_t)uid, false, &u);
		goto check;
	}
	errno = 0;
	pw = getpwnam(spec);
	if (!pw) {
		if (!strcmp(spec, "nobody")) {
			/* No passwd entry for nobody (a minimal image): the
			 * number every Linux distribution gives it. */
			user_from_uid(65534, 65534, true, &u);
			goto check;
		}
		return sl_err(err, errlen, errno ? -errno : -ESRCH, "--user '%s': no such user",
			      spec);
	}
	u = (struct sl_netns_user){.uid = pw->pw_uid, .gid = pw->pw_gid};
	fill_from_passwd(&u, pw);
check:
	if (u.uid == 0 || u.gid == 0)
		return sl_err(err, errlen, -EPERM,
			      "--user: refusing to run the command as root (uid or gid 0)");
	*ret = u;
	return 0;
}

static int env_is(const char *entry, const char *const *names)
{
	for (; *names; names++) {
		size_t n = strlen(*names);

		if (!strncmp(entry, *names, n) && entry[n] == '=')
			return 1;
	}
	return 0;
}

void sl_netns_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

int sl_netns_env_build(char *const *base, struct in_addr gateway, uint16_t port,
		       const struct sl_netns_user *user, const char *const *drop, char ***ret)
{
	static const char *const proxy[] = {"HTTP_PROXY",  "HTTPS_PROXY", "http_proxy",
					    "https_proxy", "ALL_PROXY",	  "all_proxy",
					    NULL};
	static const char *const no_proxy[] = {"NO_PROXY", "no_proxy", NULL};
	static const char *const ident[] = {"HOME", "USER", "LOGNAME", NULL};
	char url[64], addr[INET_ADDRSTRLEN];
	size_t n = 0, k = 0;
	char **env;

	inet_ntop(AF_INET, &gateway, addr, sizeof(addr));
	snprintf(url, sizeof(url), "http://%s:%u", addr, port);
	while (base && base[n])
		n++;
	env = calloc(n + ELEMENTSOF(proxy) + ELEMENTSOF(no_proxy) + ELEMENTSOF(ident) + 1,
		     sizeof(*env));
	if (!env)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		/* Ours replace the caller's: a stale proxy from sluice's own
		 * environment must not be what the command believes in. */
		if (env_is(base[i], proxy) || env_is(base[i], no_proxy) ||
		    (user->name[0] && env_is(base[i], ident)) || (drop && env_is(base[i], drop)))
			continue;
		if (!(env[k++] = strdup(base[i])))
			goto oom;
	}
	for (size_t i = 0; proxy[i]; i++)
		if (asprintf(&env[k++], "%s=%s", proxy[i], url) < 0)
			goto oom_last;
	for (size_t i = 0; no_proxy[i]; i++)
		if (!(env[k++] = strdup(i ? "no_proxy=localhost,127.0.0.1,::1"
					  : "NO_PROXY=localhost,127.0.0.1,::1")))
			goto oom;
	if (user->name[0]) {
		if (asprintf(&env[k++], "HOME=%s", user->home) < 0 ||
		    asprintf(&env[k++], "USER=%s", user->name) < 0 ||
		    asprintf(&env[k++], "LOGNAME=%s", user->name) < 0)
			goto oom_last;
	}
	*ret = env;
	return 0;
oom_last:
	env[--k] = NULL; /* asprintf leaves it undefined on failure */
oom:
	sl_netns_env_free(env);
	return -ENOMEM;
}

int sl_netns_env_set(char ***env, const char *name, const char *value)
{
	size_t n = 0, len = strlen(name), i;
	char *kv, **grown;

	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return -ENOMEM;
	while ((*env)[n])
		n++;
	for (i = 0; i < n; i++)
		if (strncmp((*env)[i], name, len) == 0 && (*env)[i][len] == '=') {
			free((*env)[i]);
			(*env)[i] = kv;
			return 0;
		}
	grown = realloc(*env, (n + 2) * sizeof(*grown));
	if (!grown) {
		free(kv);
		return -ENOMEM;
	}
	grown[n] = kv;
	grown[n + 1] = NULL;
	*env = grown;
	return 0;
}
