/* SPDX-License-Identifier: MIT */
/*
 * The audit log: one JSON object per line for every decision (DESIGN.md,
 * "Audit record"). Every string field may come from an attacker (host
 * names, paths, SNI), so each is escaped completely: quotes, backslashes,
 * control characters, and invalid UTF-8 (replaced by U+FFFD), so one record
 * is always exactly one line of valid JSON.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct sl_audit_record {
	uint64_t ts_ms; /* wall clock, milliseconds since the epoch */
	const char *sandbox;
	const char *event; /* "http", "connect", "dns", "blocked" */
	const char *client;
	const char *method;
	const char *host;
	int port; /* < 0: unknown */
	const char *path;
	int status; /* < 0: none */
	const char *decision; /* "allow" / "deny" */
	const char *rule;
	const char *reason;
	const char *tls; /* "passthrough" / "inspect" / NULL */
	const char *sni;
	const char *credential; /* a secret's name, never its value */
	int64_t bytes_up, bytes_down, duration_ms; /* < 0: unknown */
	const char *proto; /* how it was asked: "socks5", or NULL (HTTP's proxy, capture) */
	/* A request held for approval (docs/control.md): how it ended
	 * ("approved", "denied", "timeout", ...), the uid that answered on the
	 * control socket (< 0: nobody did), how long it waited. NULL: not
	 * held, and the three fields are left out of the line. */
	const char *approval;
	int64_t approved_by, wait_ms;
};

/* The longest line sl_audit_format() writes: strings longer than their
 * share are cut and end in "..." so a record is never dropped for size. */
#define SL_AUDIT_LINE_MAX 16384

/* Format r as one line with its '\n'. Returns the length (< size), or
 * -ENOSPC when size is below SL_AUDIT_LINE_MAX. */
int sl_audit_format(const struct sl_audit_record *r, char *buf, size_t size);

struct sl_audit;

/* Open the log: a file (created 0600, appended to) or "-" for stdout. */
int sl_audit_open(const char *path, struct sl_audit **ret);
/* Reopen the same path (log rotation on SIGUSR1). */
int sl_audit_reopen(struct sl_audit *a);
/* The same in two halves, for a process that can no longer open files
 * (confine.h): another opens the path again (an fd, or a negative errno:
 * -EPERM for a regular file that is not the caller's, -ELOOP for a link
 * where the start found none, was_link being what sl_audit_path_is_link()
 * said then), and the log takes that fd in place of its own (closing the
 * old one; a log on stdout closes fd and ignores it). */
int sl_audit_open_again(const char *path, bool was_link);
/* Was path a symbolic link (lstat)? Asked at the start, for reopens. */
bool sl_audit_path_is_link(const char *path);
void sl_audit_reopen_fd(struct sl_audit *a, int fd);
/* Write one record. Blocks until the whole line is written: nothing is
 * dropped. Returns 0 or a negative errno. A failed write (a short one to
 * a file included: the disk is full) is final: every later one returns
 * the same error without writing, reopen or not (sl_audit_error).
 * Batched (sl_audit_batch), the line is kept, and written with the others
 * by the next sl_audit_flush() (or sooner, when the batch is full); its
 * error shows from then on. */
int sl_audit_write(struct sl_audit *a, const struct sl_audit_record *r);
/* fn is told of every record the log takes, as sl_audit_write() takes it
 * (written, or kept in the batch): the one place every record passes, so
 * that counters fed from here agree with the log (metrics.h). NULL: none. */
void sl_audit_set_observer(struct sl_audit *a,
			   void (*fn)(void *data, const struct sl_audit_record *r), void *data);
/* Keep lines and write them together, one write(2) per batch: the
 * gateway flushes once per turn of its loop, before it waits for more. */
int sl_audit_batch(struct sl_audit *a);
/* Write the lines kept. Reopen and close flush first (so no line is lost
 * nor lands in the wrong file). Returns 0 or the log's error. */
int sl_audit_flush(struct sl_audit *a);
/* The error of the first write that failed, or 0 (also for a NULL log).
 * Whoever serves the sandbox stops deciding once it is set: an agent that
 * fills the disk must not act unaudited. */
int sl_audit_error(const struct sl_audit *a);
/* The log's path, or "stdout", for messages. */
const char *sl_audit_name(const struct sl_audit *a);
/* The fd records are written to (for a process that keeps it open). */
int sl_audit_fd(const struct sl_audit *a);
void sl_audit_close(struct sl_audit *a);

/* Write one record that stands for what the log does not show one by one
 * (packets the kernel could not queue, records a rate limit held back):
 * `event`, denied, with no client or destination, for the reason that fmt
 * formats, which says how many. duration_ms < 0 is unknown. Returns what
 * sl_audit_write() does. */
int sl_audit_write_summary(struct sl_audit *a, const char *sandbox, const char *event,
			   int64_t duration_ms, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Milliseconds since the epoch, for ts_ms. */
uint64_t sl_audit_now_ms(void);
