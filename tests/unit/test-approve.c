/* SPDX-License-Identifier: MIT */
/* Approval holds (approve.c) on a loop of their own, with a real TCP
 * connection as the held client: the bound, the IDs, answers, the listing's
 * escaping, the deadline, a client that goes away, a reload. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "approve.h"
#include "metrics.h"
#include "control-proto.h"
#include "gateway-internal.h"

struct owner {
	int went, refused, gone;
	const char *reason;
	struct sl_gw_approval out;
	struct sl_gw_hold *h;
	const char *body;
};

static void go(void *o)
{
	((struct owner *)o)->went++;
}

static void refuse(void *o, const char *reason, const char *why)
{
	(void)why;
	((struct owner *)o)->refused++;
	((struct owner *)o)->reason = reason;
}

static void gone(void *o)
{
	((struct owner *)o)->gone++;
}

static void body(void *o, const char **p, size_t *n, int64_t *total)
{
	*p = ((struct owner *)o)->body;
	*n = strlen(*p);
	*total = 1000;
}

static const struct sl_gw_hold_ops ops = {.go = go, .refuse = refuse, .gone = gone};
static const struct sl_gw_hold_ops ops_body = {
    .go = go, .refuse = refuse, .gone = gone, .body = body};

/* A connected TCP pair on loopback: [0] the held client's socket as the
 * gateway has it, [1] the client's end. */
static void tcp_pair(int fds[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fds[1], (struct sockaddr *)&a, sizeof(a)), 0);
	fds[0] = accept(l, NULL, NULL);
	assert_true(fds[0] >= 0);
	close(l);
}

static struct sl_gw gw;
static uv_loop_t loop;

static int setup(void **state)
{
	(void)state;
	memset(&gw, 0, sizeof(gw));
	assert_int_equal(uv_loop_init(&loop), 0);
	gw.loop = &loop;
	gw.cfg.sandbox = "sb";
	assert_int_equal(sl_metrics_new(&gw.metrics), 0); /* every gateway has them */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uv_run(&loop, UV_RUN_DEFAULT); /* the holds' timers close */
	assert_int_equal(uv_loop_close(&loop), 0);
	sl_metrics_free(gw.metrics);
	return 0;
}

static char lines[SL_GW_HOLDS_MAX + 2][2048];
static int n_lines;

static void take_line(void *data, const char *s)
{
	(void)data;
	snprintf(lines[n_lines++], sizeof(lines[0]), "%s", s);
}

static void list(void)
{
	n_lines = 0;
	sl_gw_holds_list(&gw, take_line, NULL);
}

static void test_bound_ids_answers(void **state)
{
	static struct owner o[SL_GW_HOLDS_MAX + 1];
	struct sl_gw_hold_what w = {.method = "GET", .host = "a.test", .port = 80, .path = "/x"};
	int fds[2];
	char id[SL_CTL_ID_LEN + 1];

	(void)state;
	tcp_pair(fds);
	memset(o, 0, sizeof(o));
	for (int i = 0; i < SL_GW_HOLDS_MAX; i++)
		assert_int_equal(sl_gw_hold_start(&gw, &o[i], &ops, fds[0], 60000, &w, &o[i].out,
						  &o[i].h),
				 0);
	/* The bound: refused, said so for the record. */
	assert_int_equal(sl_gw_hold_start(&gw, &o[SL_GW_HOLDS_MAX], &ops, fds[0], 60000, &w,
					  &o[SL_GW_HOLDS_MAX].out, &o[SL_GW_HOLDS_MAX].h),
			 -EBUSY);
	assert_string_equal(o[SL_GW_HOLDS_MAX].out.outcome, "busy");
	assert_int_equal(sl_gw_holds_count(&gw), SL_GW_HOLDS_MAX);
	list();
	assert_int_equal(n_lines, SL_GW_HOLDS_MAX);
	for (int i = 0; i < n_lines; i++) {
		assert_int_equal(strspn(lines[i], "0123456789abcdef"), SL_CTL_ID_LEN);
		assert_string_equal(lines[i] + SL_CTL_ID_LEN, " sb GET a.test:80 /x - - 0 60");
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(lines[i], lines[j], SL_CTL_ID_LEN);
	}
	/* Approve the first: go, once, recorded with the uid. */
	memcpy(id, lines[0], SL_CTL_ID_LEN);
	id[SL_CTL_ID_LEN] = '\0';
	assert_int_equal(sl_gw_hold_answer(&gw, id, true, 0), 0);
	assert_int_equal(o[0].went, 1);
	assert_string_equal(o[0].out.outcome, "approved");
	assert_int_equal(o[0].out.uid, 0);
	assert_int_equal(sl_gw_hold_answer(&gw, id, true, 0), -ENOENT);
	assert_int_equal(o[0].went, 1);
	/* Deny the second. */
	memcpy(id, lines[1], SL_CTL_ID_LEN);
	assert_int_equal(sl_gw_hold_answer(&gw, id, false, 7), 0);
	assert_int_equal(o[1].refused, 1);
	assert_string_equal(o[1].reason, "approval-denied");
	assert_int_equal(o[1].out.uid, 7);
	/* The third's owner closes: cancelled, nothing called. */
	sl_gw_hold_cancel(o[2].h);
	memcpy(id, lines[2], SL_CTL_ID_LEN);
	assert_int_equal(sl_gw_hold_answer(&gw, id, true, 0), -ENOENT);
	assert_int_equal(o[2].went + o[2].refused + o[2].gone, 0);
	/* A reload refuses the rest. */
	sl_gw_holds_refuse_all(&gw);
	assert_int_equal(sl_gw_holds_count(&gw), 0);
	for (int i = 3; i < SL_GW_HOLDS_MAX; i++) {
		assert_int_equal(o[i].refused, 1);
		assert_string_equal(o[i].reason, "approval-reloaded");
		assert_string_equal(o[i].out.outcome, "reloaded");
	}
	close(fds[0]);
	close(fds[1]);
}

static void test_listing_escapes(void **state)
{
	struct owner o = {.body = "a b\n\x1b[2J\xff"};
	struct sl_gw_hold_what w = {
	    .method = "POST", .host = "h.test", .port = 443, .path = "/p q\r\n\x07"};
	int fds[2];

	(void)state;
	tcp_pair(fds);
	assert_int_equal(sl_gw_hold_start(&gw, &o, &ops_body, fds[0], 5000, &w, &o.out, &o.h), 0);
	list();
	assert_int_equal(n_lines, 1);
	assert_string_equal(lines[0] + SL_CTL_ID_LEN,
			    " sb POST h.test:443 /p\\x20q\\x0d\\x0a\\x07 1000 a\\x20b\\x0a\\x1b[2J\\xff 0 5");
	sl_gw_hold_cancel(o.h);
	close(fds[0]);
	close(fds[1]);
}

static void test_deadline(void **state)
{
	struct owner o = {0};
	struct sl_gw_hold_what w = {.host = "c.test", .port = 22};
	int fds[2];

	(void)state;
	tcp_pair(fds);
	assert_int_equal(sl_gw_hold_start(&gw, &o, &ops, fds[0], 1000, &w, &o.out, &o.h), 0);
	list();
	assert_string_equal(lines[0] + SL_CTL_ID_LEN, " sb - c.test:22 - - - 0 1");
	/* Bounded: the deadline ends the loop's only handle. */
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(o.refused, 1);
	assert_string_equal(o.reason, "approval-timeout");
	assert_string_equal(o.out.outcome, "timeout");
	assert_int_equal(o.out.uid, -1);
	assert_true(o.out.wait_ms >= 1000);
	close(fds[0]);
	close(fds[1]);
}

static void test_client_gone(void **state)
{
	struct owner o = {0};
	struct sl_gw_hold_what w = {.host = "c.test", .port = 443};
	int fds[2];

	(void)state;
	tcp_pair(fds);
	assert_int_equal(sl_gw_hold_start(&gw, &o, &ops, fds[0], 60000, &w, &o.out, &o.h), 0);
	/* It sent something, then went: what it sent does not hide its end. */
	assert_int_equal(write(fds[1], "x", 1), 1);
	close(fds[1]);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(o.gone, 1);
	assert_int_equal(o.refused + o.went, 0);
	assert_string_equal(o.out.outcome, "client-gone");
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bound_ids_answers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_listing_escapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_gone, setup, teardown),
	};
	return cmocka_run_group_tests_name("approve", tests, NULL, NULL);
}
