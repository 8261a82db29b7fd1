/* SPDX-License-Identifier: MIT */
/*
 * Approval holds (approve.h, docs/control.md). Each held request has an
 * ID, a deadline and a watch on its client: one timer per hold ticks
 * every HOLD_TICK_MS, ends it at the deadline (a deny) and asks the
 * kernel whether the client is still there (TCP_INFO: a FIN or a reset
 * shows whatever the client sent before), so that a request nobody waits
 * for any more leaves `sluice pending` at once. The IDs are random (not a
 * counter an agent could predict and race a person to), unique among
 * those held, and only ever spoken on the control socket, which the
 * sandbox cannot reach.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <uv.h>

#include "approve.h"
#include "control-proto.h"
#include "gateway-internal.h"
#include "macro.h"
#include "metrics.h"

#define HOLD_TICK_MS 200
/* What `sluice pending` shows of a path and of a body's start. */
#define SHOW_PATH 160
#define SHOW_BODY 48

struct sl_gw_hold {
	struct sl_gw *gw;
	struct sl_gw_hold *prev, *next;
	void *owner; /* NULL once ended or cancelled */
	const struct sl_gw_hold_ops *ops;
	struct sl_gw_approval *out;
	int fd;
	char id[SL_CTL_ID_LEN + 1];
	char method[16];
	char host[SL_HOST_BUF];
	uint16_t port;
	char *path;
	bool path_cut; /* longer than what was kept of it */
	uint64_t start_ms, deadline_ms;
	unsigned timeout_ms;
	uv_timer_t timer;
};

static void hold_freed(uv_handle_t *h)
{
	struct sl_gw_hold *hd = h->data;

	free(hd->path);
	free(hd);
}

/* Out of the list, its timer closing: the owner is not called again. */
static void detach(struct sl_gw_hold *h)
{
	struct sl_gw *gw = h->gw;

	if (h->prev)
		h->prev->next = h->next;
	else
		gw->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	gw->n_holds--;
	h->owner = NULL;
	uv_timer_stop(&h->timer);
	uv_close((uv_handle_t *)&h->timer, hold_freed);
}

static void record(struct sl_gw_hold *h, const char *outcome, int64_t uid)
{
	uint64_t now = uv_now(h->gw->loop);

	h->out->outcome = outcome;
	h->out->uid = uid;
	h->out->wait_ms = now > h->start_ms ? now - h->start_ms : 0;
	/* A person's answer or its absence is an approval wait; a client that
	 * left or a reload is not. */
	if (!strcmp(outcome, "approved"))
		sl_metrics_approval_wait(h->gw->metrics, SL_METRICS_APPROVED, h->out->wait_ms);
	else if (!strcmp(outcome, "denied"))
		sl_metrics_approval_wait(h->gw->metrics, SL_METRICS_REFUSED, h->out->wait_ms);
	else if (!strcmp(outcome, "timeout"))
		sl_metrics_approval_wait(h->gw->metrics, SL_METRICS_TIMED_OUT, h->out->wait_ms);
}

/* End h: the outcome recorded, then the one op called (after detach,
 * so that whatever the op does to its connection finds no hold). */
static void end_refused(struct sl_gw_hold *h, const char *outcome, int64_t uid,
			const char *reason, const char *why)
{
	void *owner = h->owner;
	const struct sl_gw_hold_ops *ops = h->ops;

	record(h, outcome, uid);
	detach(h);
	ops->refuse(owner, reason, why);
}

/* Has the client gone? Its FIN (CLOSE_WAIT: it will send no more, so
 * no answer can be read) or a reset (CLOSE). */
static bool client_gone(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return true;
	return ti.tcpi_state == TCP_CLOSE_WAIT || ti.tcpi_state == TCP_CLOSE ||
	       ti.tcpi_state == TCP_LAST_ACK;
}

static void tick(uv_timer_t *t)
{
	struct sl_gw_hold *h = t->data;
	char why[96];

	if (!h->owner)
		return;
	if (client_gone(h->fd)) {
		void *owner = h->owner;
		const struct sl_gw_hold_ops *ops = h->ops;

		record(h, "client-gone", -1);
		detach(h);
		ops->gone(owner);
		return;
	}
	if (uv_now(h->gw->loop) >= h->deadline_ms) {
		snprintf(why, sizeof(why),
			 "nobody approved this request within %u s (approve_timeout)",
			 h->timeout_ms / 1000);
		end_refused(h, "timeout", -1, "approval-timeout", why);
	}
}

static bool id_taken(const struct sl_gw *gw, const char *id)
{
	for (const struct sl_gw_hold *h = gw->holds; h; h = h->next)
		if (!strcmp(h->id, id))
			return true;
	return false;
}

static int new_id(const struct sl_gw *gw, char id[SL_CTL_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[SL_CTL_ID_LEN / 2];

	for (int tries = 0; tries < 8; tries++) {
		if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
			return -EIO;
		for (size_t i = 0; i < sizeof(b); i++) {
			id[2 * i] = hex[b[i] >> 4];
			id[2 * i + 1] = hex[b[i] & 15];
		}
		id[SL_CTL_ID_LEN] = '\0';
		if (!id_taken(gw, id))
			return 0;
	}
	return -EEXIST;
}

int sl_gw_hold_start(struct sl_gw *gw, void *owner, const struct sl_gw_hold_ops *ops,
		     int client_fd, unsigned timeout_ms, const struct sl_gw_hold_what *what,
		     struct sl_gw_approval *out, struct sl_gw_hold **ret)
{
	struct sl_gw_hold *h;
	int r;

	*out = (struct sl_gw_approval){.outcome = "busy", .uid = -1};
	if (gw->n_holds >= SL_GW_HOLDS_MAX)
		return -EBUSY;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	r = new_id(gw, h->id);
	if (r < 0) {
		free(h);
		return r;
	}
	if (what->path && !(h->path = strndup(what->path, SHOW_PATH * 4))) {
		free(h);
		return -ENOMEM;
	}
	h->path_cut = what->path && strnlen(what->path, SHOW_PATH * 4 + 1) > SHOW_PATH * 4;
	h->gw = gw;
	h->owner = owner;
	h->ops = ops;
	h->out = out;
	h->fd = client_fd;
	snprintf(h->method, sizeof(h->method), "%s", what->method ? what->method : "-");
	snprintf(h->host, sizeof(h->host), "%s", what->host ? what->host : "-");
	h->port = what->port;
	h->timeout_ms = timeout_ms;
	h->start_ms = uv_now(gw->loop);
	h->deadline_ms = h->start_ms + timeout_ms;
	uv_timer_init(gw->loop, &h->timer);
	h->timer.data = h;
	uv_timer_start(&h->timer, tick, HOLD_TICK_MS, HOLD_TICK_MS);
	/* Oldest first: appended. */
	if (gw->holds) {
		struct sl_gw_hold *last = gw->holds;

		while (last->next)
			last = last->next;
		last->next = h;
		h->prev = last;
	} else {
		gw->holds = h;
	}
	gw->n_holds++;
	*out = (struct sl_gw_approval){.outcome = "held", .uid = -1};
	*ret = h;
	return 0;
}

void sl_gw_hold_cancel(struct sl_gw_hold *h)
{
	if (h && h->owner)
		detach(h);
}

/* The path as pending shows it. One that was cut says so ("..."), as a
 * cut body does: the operator must not take a prefix for the whole (the
 * rest, a query carrying data out, goes upstream once approved). The
 * escape marks its own cut when the escaped form does not fit. */
static void show_path(const struct sl_gw_hold *h, char *dst, size_t size)
{
	size_t n, need = 0;

	if (!h->path) {
		sl_ctl_escape("-", 1, false, dst, size);
		return;
	}
	n = strlen(h->path);
	sl_ctl_escape(h->path, n, false, dst, size);
	if (!h->path_cut)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)h->path[i];

		need += b > 0x20 && b < 0x7f && b != '\\' ? 1 : 4;
	}
	if (need + 3 < size)
		strcat(dst, "...");
}

static void list_one(struct sl_gw_hold *h, void (*line)(void *data, const char *s), void *data)
{
	char sandbox[96], method[64], host[SL_HOST_BUF * 4 + 8], path[SHOW_PATH * 4 + 8];
	char size[24] = "-", body[SHOW_BODY * 4 + 8] = "-", hp[sizeof(host) + 8];
	char out[2048];
	uint64_t now = uv_now(h->gw->loop);

	if (h->ops->body) {
		const char *p = NULL;
		size_t n = 0;
		int64_t total = -1;

		h->ops->body(h->owner, &p, &n, &total);
		if (total >= 0)
			snprintf(size, sizeof(size), "%lld", (long long)total);
		else
			snprintf(size, sizeof(size), "chunked");
		sl_ctl_escape(p, n < SHOW_BODY ? n : SHOW_BODY, false, body, sizeof(body));
		if (n > SHOW_BODY && strlen(body) + 4 < sizeof(body))
			strcat(body, "...");
	}
	sl_ctl_escape(h->gw->cfg.sandbox ? h->gw->cfg.sandbox : "-",
		      h->gw->cfg.sandbox ? strlen(h->gw->cfg.sandbox) : 1, false, sandbox,
		      sizeof(sandbox));
	sl_ctl_escape(h->method, strlen(h->method), false, method, sizeof(method));
	sl_ctl_escape(h->host, strlen(h->host), false, host, sizeof(host));
	snprintf(hp, sizeof(hp), "%s:%u", host, h->port);
	show_path(h, path, sizeof(path));
	snprintf(out, sizeof(out), "%s %s %s %s %s %s %s %llu %u", h->id, sandbox, method, hp, path,
		 size, body, (unsigned long long)((now - h->start_ms) / 1000), h->timeout_ms / 1000);
	line(data, out);
}

void sl_gw_holds_list(struct sl_gw *gw, void (*line)(void *data, const char *s), void *data)
{
	for (struct sl_gw_hold *h = gw->holds; h; h = h->next)
		list_one(h, line, data);
}

int sl_gw_hold_answer(struct sl_gw *gw, const char *id, bool approve, uint32_t uid)
{
	struct sl_gw_hold *h;
	char why[96];

	for (h = gw->holds; h && strcmp(h->id, id); h = h->next)
		;
	if (!h)
		return -ENOENT;
	if (!approve) {
		snprintf(why, sizeof(why), "denied by a person (uid %u) on the control socket", uid);
		end_refused(h, "denied", uid, "approval-denied", why);
	} else {
		void *owner = h->owner;
		const struct sl_gw_hold_ops *ops = h->ops;

		record(h, "approved", uid);
		detach(h);
		ops->go(owner);
	}
	return 0;
}

unsigned sl_gw_holds_count(const struct sl_gw *gw)
{
	return gw->n_holds;
}

void sl_gw_holds_refuse_all(struct sl_gw *gw)
{
	/* Bounded: each pass ends the first (detach takes it off). */
	for (unsigned n = 0; gw->holds && n <= SL_GW_HOLDS_MAX; n++)
		end_refused(gw->holds, "reloaded", -1, "approval-reloaded",
			    "the policy was reloaded while this request waited for approval; "
			    "ask again");
}
