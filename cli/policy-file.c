/* SPDX-License-Identifier: MIT */
/* The policy file, from a trusted place only (policy-file.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "policy-file.h"
#include "safe-file.h"

/* Root trusts root; an unprivileged sluice (gateway, check) trusts its own
 * user as well, whose files it could not protect anyway. */
static int open_checked(const char *prog, const char *path, const char *const *sandbox_writable,
			int *ret_fd)
{
	char err[1024];
	int r;

	r = sl_safe_file_open(path, geteuid(), sandbox_writable, 0, ret_fd, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "%s: %s\n", prog, err);
	return r;
}

static int said(const char *prog, const char *path, int r, struct sl_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", d->msgs[i]);
	sl_diags_clear(d);
	if (r == -ENOMEM)
		fprintf(stderr, "%s: %s: out of memory\n", prog, path);
	return r;
}

int sl_cli_policy_load(const char *prog, const char *path, const char *const *sandbox_writable,
		       struct sl_policy **ret)
{
	_cleanup_close_ int fd = -1;
	int r;

	r = open_checked(prog, path, sandbox_writable, &fd);
	if (r < 0)
		return r;
	return sl_cli_policy_load_fd(prog, TAKE_FD(fd), path, ret);
}

int sl_cli_policy_load_fd(const char *prog, int fd, const char *path, struct sl_policy **ret)
{
	_cleanup_close_ int owned = fd;
	struct sl_diags d = {0};

	return said(prog, path, sl_policy_load_fd(owned, path, ret, &d), &d);
}

int sl_cli_policy_load_bytes(const char *prog, const char *path,
			     const char *const *sandbox_writable, struct sl_policy **ret,
			     char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct sl_diags d = {0};
	size_t len = 0;
	int r;

	r = open_checked(prog, path, sandbox_writable, &fd);
	if (r < 0)
		return r;
	r = sl_policy_read_fd(fd, path, &buf, &len, &d);
	if (r == 0)
		r = sl_policy_load_buffer(path, buf, len, ret, &d);
	if (said(prog, path, r, &d) < 0)
		return r;
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

bool sl_cli_hup_is_request(int si_code)
{
	return si_code == SI_USER || si_code == SI_QUEUE || si_code == SI_TKILL;
}
