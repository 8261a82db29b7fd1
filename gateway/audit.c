/* SPDX-License-Identifier: MIT */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

/* No single string may take more than this of a line. */
#define FIELD_MAX 1024

struct sl_audit {
	char *path; /* NULL for stdout */
	int fd;
	bool regular; /* a file: a short write means it is full */
	bool path_was_link; /* at the start: a reopen may follow it */
	int err;      /* the first write that failed (sticky), or 0 */
	/* sl_audit_batch(): lines kept here until sl_audit_flush(). */
	char *batch;
	size_t batch_len;
	/* Told of every record the log takes (the metrics: metrics.h). */
	void (*observer)(void *data, const struct sl_audit_record *r);
	void *observer_data;
};

/* A batch is written before it would grow past this: a few hundred
 * records, one write(2). */
#define BATCH_MAX 65536

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || o->len + n >= o->size) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static void put_string(struct out *o, const char *key, size_t key_len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, i, start;

	put(o, key, key_len);
	if (!s) {
		puts_(o, "null");
		return;
	}
	n = strlen(s);
	puts_(o, "\"");
	start = o->len;
	for (i = 0; i < n;) {
		unsigned char c = p[i];
		char esc[8];
		size_t l;

		if (o->len - start > FIELD_MAX) {
			puts_(o, "...");
			break;
		}
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(o, esc, 2);
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			puts_(o, esc);
			i++;
			continue;
		}
		l = utf8_len(p + i, n - i);
		if (l == 0) {
			puts_(o, "\\ufffd");
			i++;
			continue;
		}
		put(o, (const char *)p + i, l);
		i += l;
	}
	puts_(o, "\"");
}

/* v's decimal digits at the end of buf[0..size), width at least min (zero
 * padded); returns where they begin. */
static char *digits(char *buf, size_t size, uint64_t v, unsigned min)
{
	char *p = buf + size;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while ((v || (unsigned)(buf + size - p) < min) && p > buf);
	return p;
}

static void put_int(struct out *o, const char *key, size_t key_len, int64_t v)
{
	char num[24], *p;

	put(o, key, key_len);
	if (v < 0) {
		puts_(o, "null");
		return;
	}
	p = digits(num, sizeof(num), (uint64_t)v, 1);
	put(o, p, (size_t)(num + sizeof(num) - p));
}

/* ,"name": with its length, for put_string and put_int. */
#define KEY(name) ",\"" name "\":", sizeof(",\"" name "\":") - 1

/* The time, "2025-11-30T09:30:00.123Z": gmtime_r once a second. */
static void put_time(struct out *o, uint64_t ts_ms)
{
	static __thread time_t last = -1;
	static __thread char date[64]; /* "2025-11-30T09:30:" */
	time_t secs = (time_t)(ts_ms / 1000);
	char frac[8], *p;

	if (secs != last) {
		struct tm tm;

		gmtime_r(&secs, &tm);
		snprintf(date, sizeof(date), "%04d-%02d-%02dT%02d:%02d:", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
		last = secs;
	}
	puts_(o, date);
	p = digits(frac, sizeof(frac), (uint64_t)(secs % 60), 2);
	put(o, p, (size_t)(frac + sizeof(frac) - p));
	put(o, ".", 1);
	p = digits(frac, sizeof(frac), ts_ms % 1000, 3);
	put(o, p, (size_t)(frac + sizeof(frac) - p));
}

int sl_audit_format(const struct sl_audit_record *r, char *buf, size_t size)
{
	struct out o = { .buf = buf, .size = size };

	if (size < SL_AUDIT_LINE_MAX)
		return -ENOSPC;
	puts_(&o, "{\"ts\":\"");
	put_time(&o, r->ts_ms);
	puts_(&o, "Z\"");
	put_string(&o, KEY("sandbox"), r->sandbox);
	put_string(&o, KEY("event"), r->event);
	put_string(&o, KEY("client"), r->client);
	put_string(&o, KEY("method"), r->method);
	put_string(&o, KEY("host"), r->host);
	put_int(&o, KEY("port"), r->port);
	put_string(&o, KEY("path"), r->path);
	put_int(&o, KEY("status"), r->status);
	put_string(&o, KEY("decision"), r->decision);
	put_string(&o, KEY("rule"), r->rule);
	put_string(&o, KEY("reason"), r->reason);
	put_string(&o, KEY("tls"), r->tls);
	put_string(&o, KEY("sni"), r->sni);
	put_string(&o, KEY("credential"), r->credential);
	if (r->proto) /* only where it says something: records stay as they were */
		put_string(&o, KEY("proto"), r->proto);
	put_int(&o, KEY("bytes_up"), r->bytes_up);
	put_int(&o, KEY("bytes_down"), r->bytes_down);
	put_int(&o, KEY("duration_ms"), r->duration_ms);
	if (r->approval) {
		put_string(&o, KEY("approval"), r->approval);
		put_int(&o, KEY("approved_by"), r->approved_by);
		put_int(&o, KEY("wait_ms"), r->wait_ms);
	}
	puts_(&o, "}\n");
	/* Fields are capped so that 20 of them always fit; this cannot
	 * happen, and if it did the line would be cut, so refuse it. */
	if (o.full)
		return -ENOSPC;
	buf[o.len] = '\0';
	return (int)o.len;
}

uint64_t sl_audit_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);

	return fd < 0 ? negative_errno() : fd;
}

static bool is_regular(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

int sl_audit_open(const char *path, struct sl_audit **ret)
{
	struct sl_audit *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	if (!strcmp(path, "-")) {
		a->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (a->fd < 0) {
			int r = negative_errno();
			free(a);
			return r;
		}
	} else {
		a->path = strdup(path);
		if (!a->path) {
			free(a);
			return -ENOMEM;
		}
		a->path_was_link = sl_audit_path_is_link(path);
		a->fd = open_log(path);
		if (a->fd < 0) {
			int r = a->fd;
			free(a->path);
			free(a);
			return r;
		}
	}
	a->regular = is_regular(a->fd);
	*ret = a;
	return 0;
}

/* A reopen happens long after the start, when another user may have had
 * the time to plant something where the log was (a rotation moved it
 * away): a link is followed only if the path was one at the start (say
 * /dev/fd/3), and a regular file that is not ours (made since by someone
 * else, to read what we write or have root append to a file of their
 * choosing) is refused. The log stays where it was then. */
int sl_audit_open_again(const char *path, bool was_link)
{
	struct stat st;
	int fd = open(path,
		      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | (was_link ? 0 : O_NOFOLLOW),
		      0600);

	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && st.st_uid != geteuid())) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

bool sl_audit_path_is_link(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

int sl_audit_reopen(struct sl_audit *a)
{
	int fd;

	if (!a->path)
		return 0;
	fd = sl_audit_open_again(a->path, a->path_was_link);
	if (fd < 0)
		return fd; /* keep writing to the old file rather than lose lines */
	(void)sl_audit_flush(a);
	close(a->fd);
	a->fd = fd;
	a->regular = is_regular(fd);
	return 0;
}

void sl_audit_reopen_fd(struct sl_audit *a, int fd)
{
	if (!a->path) {
		close(fd);
		return;
	}
	/* What was kept goes where it was meant to: the old file. */
	(void)sl_audit_flush(a);
	close(a->fd);
	a->fd = fd;
	a->regular = is_regular(fd);
}

/* The log is broken from here on: every later write says so at once. A
 * log with a hole in it must not go on as if it were whole, and what
 * serves the sandbox stops on it (sl_audit_error). */
static int fail(struct sl_audit *a, int err)
{
	if (!a->err)
		a->err = err;
	return a->err;
}

/* Whole lines, in one write: with O_APPEND they land whole even when
 * another process appends to the same file. Partial writes (a pipe or
 * terminal on stdout) are finished, never dropped; to a file, a short
 * write means it is full (or over its size limit): a line is cut, and
 * that is a failure, not something to finish later. */
static int write_lines(struct sl_audit *a, const char *line, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(a->fd, line + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* stdout may be non-blocking when shared: wait for
			 * room rather than drop the line. */
			struct pollfd pfd = { .fd = a->fd, .events = POLLOUT };

			(void)poll(&pfd, 1, 1000);
			continue;
		}
		if (w < 0)
			return fail(a, negative_errno());
		if (w == 0)
			return fail(a, -EIO);
		done += (size_t)w;
		if (done < n && a->regular)
			return fail(a, -ENOSPC);
	}
	return 0;
}

int sl_audit_flush(struct sl_audit *a)
{
	int r;

	if (!a || !a->batch_len)
		return a ? a->err : 0;
	r = a->err ? a->err : write_lines(a, a->batch, a->batch_len);
	a->batch_len = 0;
	return r;
}

int sl_audit_batch(struct sl_audit *a)
{
	if (a->batch)
		return 0;
	a->batch = malloc(BATCH_MAX);
	return a->batch ? 0 : -ENOMEM;
}

int sl_audit_write(struct sl_audit *a, const struct sl_audit_record *r)
{
	char line[SL_AUDIT_LINE_MAX + 64];
	int n;

	if (a->err)
		return a->err;
	n = sl_audit_format(r, line, sizeof(line));
	if (n < 0)
		return n;
	if (!a->batch) {
		int w = write_lines(a, line, (size_t)n);

		if (w == 0 && a->observer)
			a->observer(a->observer_data, r);
		return w;
	}
	if (a->batch_len + (size_t)n > BATCH_MAX && sl_audit_flush(a) < 0)
		return a->err;
	memcpy(a->batch + a->batch_len, line, (size_t)n);
	a->batch_len += (size_t)n;
	if (a->observer)
		a->observer(a->observer_data, r);
	return 0;
}

void sl_audit_set_observer(struct sl_audit *a,
			   void (*fn)(void *data, const struct sl_audit_record *r), void *data)
{
	a->observer = fn;
	a->observer_data = data;
}

int sl_audit_error(const struct sl_audit *a)
{
	return a ? a->err : 0;
}

const char *sl_audit_name(const struct sl_audit *a)
{
	return a->path ? a->path : "stdout";
}

int sl_audit_write_summary(struct sl_audit *a, const char *sandbox, const char *event,
			   int64_t duration_ms, const char *fmt, ...)
{
	char reason[128];
	struct sl_audit_record r = {
	    .ts_ms = sl_audit_now_ms(),
	    .sandbox = sandbox,
	    .event = event,
	    .port = -1,
	    .status = -1,
	    .decision = "deny",
	    .reason = reason,
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = duration_ms,
	};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return sl_audit_write(a, &r);
}

int sl_audit_fd(const struct sl_audit *a)
{
	return a->fd;
}

void sl_audit_close(struct sl_audit *a)
{
	if (!a)
		return;
	(void)sl_audit_flush(a);
	if (a->fd >= 0)
		close(a->fd);
	free(a->batch);
	free(a->path);
	free(a);
}
