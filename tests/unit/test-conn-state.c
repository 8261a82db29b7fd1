/* SPDX-License-Identifier: MIT */
/*
 * A connection's transition table (gateway/conn-state.c): every transition
 * the design has is allowed, every other one aborts the gateway with a
 * message naming both states, and the table's shape holds (every state
 * reachable from NEW, CLOSING from every live state, nothing out of
 * CLOSED). The list below is written from the design, not read from the
 * table: a row edited by mistake fails here.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn-state.h"

static const struct {
	enum state from, to;
} legal[] = {
	{ST_NEW, ST_HEAD},	     {ST_NEW, ST_RESPONDING},	    {ST_NEW, ST_CLOSING},
	{ST_HEAD, ST_RESOLVING},     {ST_HEAD, ST_CONNECTING},	    {ST_HEAD, ST_PEEK},
	{ST_HEAD, ST_INSPECT},	     {ST_HEAD, ST_RESPONDING},	    {ST_HEAD, ST_CLOSING},
	{ST_IDLE, ST_HEAD},	     {ST_IDLE, ST_RESPONDING},	    {ST_IDLE, ST_CLOSING},
	{ST_RESOLVING, ST_CONNECTING}, {ST_RESOLVING, ST_RESPONDING}, {ST_RESOLVING, ST_CLOSING},
	{ST_CONNECTING, ST_RELAY},   {ST_CONNECTING, ST_PEEK},	    {ST_CONNECTING, ST_RESPONDING},
	{ST_CONNECTING, ST_CLOSING}, {ST_PEEK, ST_RELAY},	    {ST_PEEK, ST_INSPECT},
	{ST_PEEK, ST_DONE},	     {ST_PEEK, ST_RESPONDING},	    {ST_PEEK, ST_CLOSING},
	{ST_RELAY, ST_DONE},	     {ST_RELAY, ST_RESPONDING},	    {ST_RELAY, ST_CLOSING},
	{ST_RELAY, ST_CONNECTING},   {ST_CONNECTING, ST_SERVER_HELLO}, {ST_PEEK, ST_SERVER_HELLO},
	{ST_SERVER_HELLO, ST_PEEK},  {ST_SERVER_HELLO, ST_RELAY},  {ST_SERVER_HELLO, ST_CLOSING},
	{ST_INSPECT, ST_CLOSING},    {ST_RESPONDING, ST_CLOSING},   {ST_DONE, ST_HEAD},
	{ST_DONE, ST_IDLE},	     {ST_DONE, ST_CLOSING},	    {ST_CLOSING, ST_CLOSED},
};

static bool in_design(enum state from, enum state to)
{
	size_t i;

	for (i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		if (legal[i].from == from && legal[i].to == to)
			return true;
	return false;
}

static void test_legal_accepted(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(legal) / sizeof(legal[0]); i++) {
		assert_true(conn_state_allowed(legal[i].from, legal[i].to));
		conn_state_check(legal[i].from, legal[i].to); /* returns */
	}
}

/* conn_state_check(from, to) in a child: did it abort, and what did it say? */
static bool aborts(enum state from, enum state to, char *said, size_t len)
{
	int fds[2], status;
	pid_t pid;
	ssize_t n;
	size_t got = 0;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		signal(SIGABRT, SIG_DFL);
		conn_state_check(from, to);
		_exit(0);
	}
	close(fds[1]);
	while (got + 1 < len && (n = read(fds[0], said + got, len - 1 - got)) > 0)
		got += (size_t)n;
	said[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_illegal_caught(void **state)
{
	unsigned from, to, caught = 0;
	char said[512], want[64];

	for (from = 0; from < ST_COUNT; from++)
		for (to = 0; to < ST_COUNT; to++) {
			if (in_design(from, to)) {
				continue;
			}
			assert_false(conn_state_allowed(from, to));
			if (!aborts(from, to, said, sizeof(said))) {
				fail_msg("%s -> %s was not caught", conn_state_name(from),
					 conn_state_name(to));
			}
			snprintf(want, sizeof(want), "from %s to %s", conn_state_name(from),
				 conn_state_name(to));
			if (!strstr(said, want))
				fail_msg("%s -> %s: said '%s'", conn_state_name(from),
					 conn_state_name(to), said);
			caught++;
		}
	assert_int_equal(caught, ST_COUNT * ST_COUNT - sizeof(legal) / sizeof(legal[0]));
	/* Not a state at all: caught too. */
	assert_false(conn_state_allowed(ST_COUNT, ST_CLOSING));
	assert_false(conn_state_allowed(ST_HEAD, (enum state)-1));
	assert_true(aborts(ST_HEAD, ST_COUNT, said, sizeof(said)));
}

/* reach[s]: the states reachable from s (s included). */
static void closure(bool reach[ST_COUNT][ST_COUNT])
{
	unsigned a, b, k;

	for (a = 0; a < ST_COUNT; a++)
		for (b = 0; b < ST_COUNT; b++)
			reach[a][b] = a == b || conn_state_allowed(a, b);
	for (k = 0; k < ST_COUNT; k++)
		for (a = 0; a < ST_COUNT; a++)
			for (b = 0; b < ST_COUNT; b++)
				if (reach[a][k] && reach[k][b])
					reach[a][b] = true;
}

static void test_shape(void **state)
{
	bool reach[ST_COUNT][ST_COUNT];
	unsigned s, t;

	closure(reach);
	for (s = 0; s < ST_COUNT; s++) {
		if (!reach[ST_NEW][s])
			fail_msg("%s is not reachable from NEW", conn_state_name(s));
		/* Whatever happens, a connection can always be closed, and
		 * every close ends in CLOSED, where its record is written. */
		if (s != ST_CLOSED && !conn_state_allowed(s, ST_CLOSING) && s != ST_CLOSING)
			fail_msg("%s cannot close", conn_state_name(s));
		if (!reach[s][ST_CLOSED])
			fail_msg("%s never ends", conn_state_name(s));
		/* No state goes to itself: a transition is a change. */
		assert_false(conn_state_allowed(s, s));
	}
	for (t = 0; t < ST_COUNT; t++)
		assert_false(conn_state_allowed(ST_CLOSED, t));
	/* Closing is the way out: nothing goes back from it. */
	for (t = 0; t < ST_COUNT; t++)
		if (t != ST_CLOSED)
			assert_false(conn_state_allowed(ST_CLOSING, t));
	/* An exchange is done only after bytes flowed or a tunnel peeked. */
	for (s = 0; s < ST_COUNT; s++)
		if (conn_state_allowed(s, ST_DONE))
			assert_true(s == ST_RELAY || s == ST_PEEK);
}

static void test_names(void **state)
{
	unsigned a, b;

	for (a = 0; a < ST_COUNT; a++) {
		assert_string_not_equal(conn_state_name(a), "?");
		for (b = a + 1; b < ST_COUNT; b++)
			assert_string_not_equal(conn_state_name(a), conn_state_name(b));
	}
	assert_string_equal(conn_state_name(ST_COUNT), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legal_accepted),
		cmocka_unit_test(test_illegal_caught),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("conn-state", tests, NULL, NULL);
}
