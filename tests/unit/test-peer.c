/* SPDX-License-Identifier: MIT */
/*
 * The gateway serves only its sandbox (defence in depth behind the host's
 * nftables, which drop other peers first and so cannot be bypassed in an
 * integration test): the peer check itself, and a real gateway on
 * loopback that closes a peer which is not the configured one, audits it,
 * and serves the one that is. No root: 127.0.0.2 is a loopback address
 * any process may bind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway-internal.h"

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	sin6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	return ss;
}

static void test_peer_allowed(void **state)
{
	struct sl_gw gw = {0};
	struct sockaddr_storage a;

	(void)state;
	/* Unset: anyone (`sluice gateway`). */
	a = v4("203.0.113.7", 1);
	assert_true(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));

	gw.cfg.allowed_peer = v4("10.231.0.2", 0);
	a = v4("10.231.0.2", 40000); /* any port */
	assert_true(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v4("10.231.0.1", 40000); /* the host end itself: another uid on lo */
	assert_false(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v4("10.231.0.6", 40000); /* another sandbox */
	assert_false(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v6("::ffff:10.231.0.2"); /* the same address, mapped */
	assert_true(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v6("::ffff:10.231.0.3");
	assert_false(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v6("2001:db8::2");
	assert_false(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	/* Unknown peer (getpeername failed): refused. */
	assert_false(sl_gw_peer_allowed(&gw, NULL));

	gw.cfg.allowed_peer = v6("2001:db8::2");
	assert_true(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
	a = v4("10.231.0.2", 1);
	assert_false(sl_gw_peer_allowed(&gw, (struct sockaddr *)&a));
}

/* A client of the gateway on 127.0.0.1:port, its source bound to `src`. */
static int client(const char *src, uint16_t port)
{
	struct sockaddr_storage s = v4(src, 0), d = v4("127.0.0.1", port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&s, sizeof(struct sockaddr_in)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&d, sizeof(struct sockaddr_in)), 0);
	return fd;
}

/* Turn the loop until fd is readable (bounded), then read what is there:
 * the number of bytes, 0 for a close. */
static ssize_t answer(uv_loop_t *loop, int fd, char *buf, size_t len)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		uv_run(loop, UV_RUN_NOWAIT);
		if (poll(&p, 1, 10) > 0)
			return recv(fd, buf, len, 0);
	}
	fail_msg("the gateway did not answer");
	return -1;
}

static void test_gateway_refuses_others(void **state)
{
	char audit_path[] = "/tmp/sl-test-peer-XXXXXX", listen[32], buf[4096];
	const char *get = "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n";
	struct sl_gw_resolver *resolver = NULL;
	struct sl_policy *policy = NULL;
	struct sl_audit *audit = NULL;
	struct sl_gw_config cfg;
	struct sl_gw *gw = NULL;
	uv_loop_t loop;
	uint16_t port = 0;
	ssize_t n;
	FILE *f;
	int fd, afd;

	(void)state;
	afd = mkstemp(audit_path);
	assert_true(afd >= 0);
	close(afd);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(sl_audit_open(audit_path, &audit), 0);
	assert_int_equal(sl_gw_resolver_new(&loop, "127.0.0.1:9", &resolver, buf, sizeof(buf)), 0);
	assert_int_equal(sl_policy_new_deny_all(&policy), 0);
	sl_gw_config_defaults(&cfg);
	cfg.sandbox = "sbtest";
	cfg.allowed_peer = v4("127.0.0.2", 0);
	assert_int_equal(sl_gw_new(&loop, &cfg, policy, resolver, audit, &gw), 0);
	/* A free port: the first of a few that binds. */
	for (uint16_t p = 39871; p < 39901 && !port; p++) {
		snprintf(listen, sizeof(listen), "127.0.0.1:%u", p);
		if (sl_gw_listen_proxy(gw, listen, buf, sizeof(buf)) == 0)
			port = p;
		else
			uv_run(&loop, UV_RUN_NOWAIT); /* let the failed handle close */
	}
	if (!port)
		skip();

	/* Not the sandbox: closed without a word. */
	fd = client("127.0.0.1", port);
	assert_int_equal(send(fd, get, strlen(get), 0), (ssize_t)strlen(get));
	n = answer(&loop, fd, buf, sizeof(buf));
	assert_true(n <= 0);
	close(fd);

	/* The sandbox: served (the policy denies the host: a 403 from us). */
	fd = client("127.0.0.2", port);
	assert_int_equal(send(fd, get, strlen(get), 0), (ssize_t)strlen(get));
	n = answer(&loop, fd, buf, sizeof(buf) - 1);
	assert_true(n > 12);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "HTTP/1.1 403"));
	close(fd);

	sl_gw_shutdown(gw);
	for (int i = 0; i < 100 && uv_run(&loop, UV_RUN_NOWAIT); i++)
		;
	sl_gw_resolver_free(resolver);
	for (int i = 0; i < 100 && uv_run(&loop, UV_RUN_NOWAIT); i++)
		;
	sl_audit_close(audit);
	(void)uv_loop_close(&loop);

	f = fopen(audit_path, "r");
	assert_non_null(f);
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	unlink(audit_path);
	buf[n > 0 ? n : 0] = '\0';
	assert_non_null(strstr(buf, "\"event\":\"connect\",\"client\":\"127.0.0.1:"));
	assert_non_null(strstr(buf, "\"decision\":\"deny\""));
	assert_non_null(strstr(buf, "\"reason\":\"not-the-sandbox\""));
	assert_non_null(strstr(buf, "\"client\":\"127.0.0.2:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_allowed),
		cmocka_unit_test(test_gateway_refuses_others),
	};

	return cmocka_run_group_tests_name("peer", tests, NULL, NULL);
}
