/* SPDX-License-Identifier: MIT */
/* Audit records: one line of valid JSON each, whatever bytes an attacker
 * put into the host, path or SNI. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"

static struct sl_audit_record base(void)
{
	struct sl_audit_record r = {
		.ts_ms = 1764495000123ULL, /* 2025-11-30T09:30:00.123Z */
		.sandbox = "sb1",
		.event = "connect",
		.client = "10.231.0.2:40000",
		.host = "api.example.com",
		.port = 443,
		.status = 200,
		.decision = "allow",
		.rule = "model-api",
		.reason = "allowed",
		.tls = "passthrough",
		.sni = "api.example.com",
		.bytes_up = 10,
		.bytes_down = 20,
		.duration_ms = 5,
	};
	return r;
}

static char line[SL_AUDIT_LINE_MAX];

static const char *fmt(const struct sl_audit_record *r)
{
	int n = sl_audit_format(r, line, sizeof(line));

	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(line));
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', (size_t)n - 1));
	return line;
}

static void test_record(void **state)
{
	struct sl_audit_record r = base();

	assert_string_equal(fmt(&r),
			    "{\"ts\":\"2025-11-30T09:30:00.123Z\",\"sandbox\":\"sb1\",\"event\":\"connect\","
			    "\"client\":\"10.231.0.2:40000\",\"method\":null,\"host\":\"api.example.com\","
			    "\"port\":443,\"path\":null,\"status\":200,\"decision\":\"allow\","
			    "\"rule\":\"model-api\",\"reason\":\"allowed\",\"tls\":\"passthrough\","
			    "\"sni\":\"api.example.com\",\"credential\":null,\"bytes_up\":10,"
			    "\"bytes_down\":20,\"duration_ms\":5}\n");

	r.port = -1;
	r.status = -1;
	r.bytes_up = -1;
	assert_non_null(strstr(fmt(&r), "\"port\":null,"));
	assert_non_null(strstr(line, "\"status\":null,"));
	assert_non_null(strstr(line, "\"bytes_up\":null,"));

	/* The time, as the second it falls in changes (the date part is
	 * kept from one record to the next within a second): zero padded. */
	r.ts_ms = 1764495009005ULL;
	assert_non_null(strstr(fmt(&r), "{\"ts\":\"2025-11-30T09:30:09.005Z\","));
	r.ts_ms = 1764495009999ULL;
	assert_non_null(strstr(fmt(&r), "{\"ts\":\"2025-11-30T09:30:09.999Z\","));
	r.ts_ms = 1764547199000ULL + 60000; /* 2025-12-01T00:00:59 */
	assert_non_null(strstr(fmt(&r), "{\"ts\":\"2025-12-01T00:00:59.000Z\","));
	r.ts_ms = 1764495000123ULL;
	assert_non_null(strstr(fmt(&r), "{\"ts\":\"2025-11-30T09:30:00.123Z\","));
	r.ts_ms = 0;
	r.bytes_down = 1234567890123LL;
	assert_non_null(strstr(fmt(&r), "{\"ts\":\"1970-01-01T00:00:00.000Z\","));
	assert_non_null(strstr(line, "\"bytes_down\":1234567890123,"));
}

static void test_escaping(void **state)
{
	struct sl_audit_record r = base();

	r.path = "/a\"b\\c\nd\re\x01" "f\x7fg";
	assert_non_null(strstr(fmt(&r), "\"path\":\"/a\\\"b\\\\c\\u000ad\\u000de\\u0001f\\u007fg\""));

	/* Valid UTF-8 stays; every kind of invalid sequence becomes U+FFFD. */
	r.path = "/caf\xc3\xa9";
	assert_non_null(strstr(fmt(&r), "\"path\":\"/caf\xc3\xa9\""));
	r.path = "/\xff/\xc0\xaf/\xed\xa0\x80/\xe2\x82/\xf4\x90\x80\x80";
	assert_non_null(strstr(fmt(&r), "\"path\":\"/\\ufffd/\\ufffd\\ufffd/\\ufffd\\ufffd\\ufffd/"
					"\\ufffd\\ufffd/\\ufffd\\ufffd\\ufffd\\ufffd\""));
	/* A forged record inside a field stays inside the field. */
	r.host = "x\",\"decision\":\"allow";
	assert_non_null(strstr(fmt(&r), "\"host\":\"x\\\",\\\"decision\\\":\\\"allow\""));
}

static void test_long_fields(void **state)
{
	static char big[100000];
	struct sl_audit_record r = base();

	memset(big, '"', sizeof(big) - 1);
	r.path = big;
	r.host = big;
	r.sni = big;
	r.client = big;
	r.method = big;
	r.rule = big;
	r.reason = big;
	r.sandbox = big;
	r.event = big;
	r.decision = big;
	r.tls = big;
	r.credential = big;
	/* Every field at its cap still gives one whole line. */
	fmt(&r);
	assert_non_null(strstr(line, "...\",\"port\":443"));
	assert_true(strlen(line) < SL_AUDIT_LINE_MAX);
	assert_int_equal(sl_audit_format(&r, line, 100), -ENOSPC);
}

static void test_file_and_reopen(void **state)
{
	char dir[] = "/tmp/sluice-audit-XXXXXX", path[64], moved[64], buf[4096];
	struct sl_audit_record r = base();
	struct sl_audit *a;
	int fd;
	ssize_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	snprintf(moved, sizeof(moved), "%s/audit.log.1", dir);

	assert_int_equal(sl_audit_open(path, &a), 0);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(rename(path, moved), 0);
	r.host = "second.example.com";
	assert_int_equal(sl_audit_write(a, &r), 0); /* still the old file */
	assert_int_equal(sl_audit_reopen(a), 0);
	r.host = "third.example.com";
	assert_int_equal(sl_audit_write(a, &r), 0);
	sl_audit_close(a);

	fd = open(moved, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "api.example.com"));
	assert_non_null(strstr(buf, "second.example.com"));
	assert_null(strstr(buf, "third"));

	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "third.example.com"));
	assert_int_equal(strchr(buf, '\n') - buf + 1, n); /* one line */

	unlink(path);
	unlink(moved);
	rmdir(dir);
}

/* A write that fails is final: the gateway stops on sl_audit_error, and
 * no later record (a summary, after a reopen) pretends the log is whole. */
static void test_failure_is_final(void **state)
{
	struct sl_audit_record r = base();
	struct sl_audit *a;

	(void)state;
	assert_int_equal(sl_audit_open("/dev/full", &a), 0);
	assert_int_equal(sl_audit_error(a), 0);
	assert_int_equal(sl_audit_write(a, &r), -ENOSPC);
	assert_int_equal(sl_audit_error(a), -ENOSPC);
	assert_string_equal(sl_audit_name(a), "/dev/full");
	assert_int_equal(sl_audit_write_summary(a, "sb", "blocked", -1, "x: %d more", 3), -ENOSPC);
	assert_int_equal(sl_audit_reopen(a), 0);
	assert_int_equal(sl_audit_write(a, &r), -ENOSPC);
	sl_audit_close(a);
	assert_int_equal(sl_audit_error(NULL), 0);
}

/* A short write to a file is the file being full: a failure at once, not
 * a line to finish later. RLIMIT_FSIZE stands in for a full disk: the
 * kernel writes up to the limit and says how much. */
static void test_short_write_fails(void **state)
{
	char dir[] = "/tmp/sluice-audit-XXXXXX", path[64];
	struct sl_audit_record r = base();
	struct rlimit old, lim;
	struct sl_audit *a;
	struct stat st;
	int n = sl_audit_format(&r, line, sizeof(line));

	(void)state;
	assert_true(n > 20);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	assert_int_equal(sl_audit_open(path, &a), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = (rlim_t)n + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(sl_audit_write(a, &r), -ENOSPC); /* 10 bytes went: short */
	assert_int_equal(sl_audit_error(a), -ENOSPC);
	lim.rlim_cur = old.rlim_cur;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	/* Room again, but the log has a cut line: nothing more is written. */
	assert_int_equal(sl_audit_write(a, &r), -ENOSPC);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, n + 10);
	sl_audit_close(a);
	signal(SIGXFSZ, SIG_DFL);
	unlink(path);
	rmdir(dir);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Batched: nothing reaches the file until a flush, then every kept line
 * in one go; a reopen writes what was kept to the old file first, a close
 * writes it too; a batch that would overflow is written before it does,
 * and a failure still shows (at the flush, and on every write after). */
static void test_batch(void **state)
{
	char dir[] = "/tmp/sluice-audit-XXXXXX", path[64], moved[64], buf[8192];
	struct sl_audit_record r = base();
	struct sl_audit *a;
	int fd, i, n = sl_audit_format(&r, line, sizeof(line));
	ssize_t got;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	snprintf(moved, sizeof(moved), "%s/audit.log.1", dir);
	assert_int_equal(sl_audit_open(path, &a), 0);
	assert_int_equal(sl_audit_batch(a), 0);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(size_of(path), 0);
	assert_int_equal(sl_audit_flush(a), 0);
	assert_int_equal(size_of(path), 2 * n);
	assert_int_equal(sl_audit_flush(a), 0); /* nothing kept: nothing more */
	assert_int_equal(size_of(path), 2 * n);

	/* Kept when the log is rotated: it goes to the old file. */
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(sl_audit_reopen(a), 0);
	assert_int_equal(size_of(moved), 3 * n);
	r.host = "after.example.com";
	assert_int_equal(sl_audit_write(a, &r), 0);
	n = sl_audit_format(&r, line, sizeof(line));
	assert_int_equal(size_of(path), 0);
	sl_audit_close(a); /* kept lines are written on close */
	fd = open(path, O_RDONLY);
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_int_equal(got, n);
	buf[got] = '\0';
	assert_non_null(strstr(buf, "after.example.com"));

	/* Past a batch's size, written before it overflows: whole lines. */
	unlink(path);
	assert_int_equal(sl_audit_open(path, &a), 0);
	assert_int_equal(sl_audit_batch(a), 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(sl_audit_write(a, &r), 0);
	assert_true(size_of(path) > 0);
	assert_int_equal(size_of(path) % n, 0);
	sl_audit_close(a);
	assert_int_equal(size_of(path), 1000 * (off_t)n);

	/* A failed flush is the log's failure. */
	assert_int_equal(sl_audit_open("/dev/full", &a), 0);
	assert_int_equal(sl_audit_batch(a), 0);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(sl_audit_flush(a), -ENOSPC);
	assert_int_equal(sl_audit_error(a), -ENOSPC);
	assert_int_equal(sl_audit_write(a, &r), -ENOSPC);
	sl_audit_close(a);

	unlink(path);
	unlink(moved);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_long_fields),
		cmocka_unit_test(test_file_and_reopen),
		cmocka_unit_test(test_failure_is_final),
		cmocka_unit_test(test_short_write_fails),
		cmocka_unit_test(test_batch),
	};
	return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
