/* SPDX-License-Identifier: MIT */
/*
 * The control socket's server (control.h). Every client is bounded: one
 * request line of SL_CTL_LINE_MAX bytes, read within CLIENT_MS, at most
 * MAX_CLIENTS at once, one answer of at most OUT_MAX bytes; a client that
 * is not root is refused before anything it sent is read, and said so on
 * stderr (the file's mode says the same, but a mode can be loosened by
 * mistake; the kernel's word on the peer cannot).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "approve.h"
#include "control-proto.h"
#include "control.h"
#include "gateway-internal.h"
#include "macro.h"
#include "metrics.h"

#define MAX_CLIENTS 8
#define CLIENT_MS 5000
/* A reload the supervisor is slow to answer (it waits up to 10 s for the
 * gateway's own answer). */
#define RELOAD_MS 30000
#define OUT_MAX 65536

struct ctl_client;

struct sl_gw_control {
	struct sl_gw *gw;
	struct sl_gw_control_cfg cfg;
	uv_pipe_t listener;
	bool listening;
	unsigned open; /* handles not yet closed: the listener's, each client's two */
	bool stopped;
	struct ctl_client *clients;
	unsigned n_clients;
	struct ctl_client *reloading; /* the client a reload answers; NULL: gone */
	bool reload_busy;	       /* asked, its answer not back yet */
};

struct ctl_client {
	struct sl_gw_control *ctl;
	struct ctl_client *prev, *next;
	uv_pipe_t pipe;
	uv_timer_t timer;
	bool closing, requested;
	unsigned handles; /* open: freed when both have closed */
	uint32_t uid;
	char line[SL_CTL_LINE_MAX + 2];
	size_t len;
	char *out;
	size_t out_len;
	bool out_full;
	uv_write_t wreq;
};

static void maybe_free(struct sl_gw_control *ctl)
{
	if (ctl->stopped && ctl->open == 0)
		free(ctl);
}

static void client_handle_closed(uv_handle_t *h)
{
	struct ctl_client *cl = h->data;
	struct sl_gw_control *ctl = cl->ctl;

	ctl->open--;
	if (--cl->handles == 0) {
		free(cl->out);
		free(cl);
	}
	maybe_free(ctl);
}

static void client_close(struct ctl_client *cl)
{
	struct sl_gw_control *ctl = cl->ctl;

	if (cl->closing)
		return;
	cl->closing = true;
	if (ctl->reloading == cl)
		ctl->reloading = NULL;
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		ctl->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	ctl->n_clients--;
	uv_timer_stop(&cl->timer);
	uv_close((uv_handle_t *)&cl->pipe, client_handle_closed);
	uv_close((uv_handle_t *)&cl->timer, client_handle_closed);
}

static void client_timeout(uv_timer_t *t)
{
	struct ctl_client *cl = t->data;

	/* A reload never answered (its starter wedged) must not keep every
	 * later one refused. */
	if (cl->ctl->reloading == cl)
		cl->ctl->reload_busy = false;
	client_close(cl);
}

static void put(struct ctl_client *cl, const char *s)
{
	size_t n = strlen(s);
	char *grown;

	if (cl->out_full)
		return;
	if (cl->out_len + n + 1 > OUT_MAX) {
		cl->out_full = true;
		return;
	}
	grown = realloc(cl->out, cl->out_len + n + 1);
	if (!grown) {
		cl->out_full = true;
		return;
	}
	cl->out = grown;
	memcpy(cl->out + cl->out_len, s, n);
	cl->out_len += n;
	cl->out[cl->out_len++] = '\n';
}

static void data_line(void *data, const char *s)
{
	struct ctl_client *cl = data;
	char line[2100];

	snprintf(line, sizeof(line), "* %s", s);
	put(cl, line);
}

static void written(uv_write_t *req, int status)
{
	(void)status;
	client_close(req->data);
}

/* The last line, then everything goes, then the client is closed. */
static void finish(struct ctl_client *cl, bool ok, const char *text)
{
	char line[600];
	uv_buf_t b;

	if (cl->closing)
		return;
	cl->out_full = false; /* room for the last line is kept below */
	snprintf(line, sizeof(line), "%s%s%s", ok ? "ok" : "error", text ? " " : "",
		 text ? text : "");
	if (cl->out_len + strlen(line) + 1 > OUT_MAX)
		cl->out_len = 0; /* cannot happen: data is capped below it */
	put(cl, line);
	b = uv_buf_init(cl->out, (unsigned)cl->out_len);
	cl->wreq.data = cl;
	uv_timer_stop(&cl->timer);
	if (!cl->out || uv_write(&cl->wreq, (uv_stream_t *)&cl->pipe, &b, 1, written) < 0)
		client_close(cl);
}

static void info(struct ctl_client *cl)
{
	const struct sl_gw_control_cfg *k = &cl->ctl->cfg;
	struct sl_gw *gw = cl->ctl->gw;
	char name[96], pol[1024], line[1300];
	uint64_t allowed, denied;

	sl_ctl_escape(k->name ? k->name : "-", k->name ? strlen(k->name) : 1, false, name,
		      sizeof(name));
	sl_ctl_escape(k->policy_path ? k->policy_path : "-",
		      k->policy_path ? strlen(k->policy_path) : 1, false, pol, sizeof(pol));
	sl_metrics_requests(sl_gw_metrics(gw), &allowed, &denied);
	snprintf(line, sizeof(line), "%s %ld %ld %s %llu %llu %llu %u", name, k->pid,
		 k->gateway_pid, pol, (unsigned long long)k->started_s,
		 (unsigned long long)allowed, (unsigned long long)denied, sl_gw_holds_count(gw));
	data_line(cl, line);
	finish(cl, true, NULL);
}

static void request(struct ctl_client *cl, const char *line, size_t len)
{
	struct sl_gw_control *ctl = cl->ctl;
	struct sl_ctl_request q;
	const char *why;
	char msg[128];

	cl->requested = true;
	uv_read_stop((uv_stream_t *)&cl->pipe);
	if (sl_ctl_parse(line, len, &q, &why) < 0) {
		finish(cl, false, why);
		return;
	}
	switch (q.verb) {
	case SL_CTL_INFO:
		info(cl);
		return;
	case SL_CTL_PENDING:
		sl_gw_holds_list(ctl->gw, data_line, cl);
		finish(cl, true, NULL);
		return;
	case SL_CTL_APPROVE:
	case SL_CTL_DENY:
		if (sl_gw_hold_answer(ctl->gw, q.id, q.verb == SL_CTL_APPROVE, cl->uid) < 0) {
			snprintf(msg, sizeof(msg),
				 "unknown ID %s: not waiting here (answered, timed out, or its "
				 "client gone; see `sluice pending`)",
				 q.id);
			finish(cl, false, msg);
			return;
		}
		finish(cl, true, q.verb == SL_CTL_APPROVE ? "approved" : "denied");
		return;
	case SL_CTL_RELOAD:
		if (!ctl->cfg.reload) {
			finish(cl, false, "this gateway cannot reload");
		} else if (ctl->reload_busy) {
			/* One at a time: the answer that comes back is the
			 * one asked for, whoever waits for it. */
			finish(cl, false, "a reload is under way; try again");
		} else {
			ctl->reloading = cl;
			ctl->reload_busy = true;
			uv_timer_start(&cl->timer, client_timeout, RELOAD_MS, 0);
			ctl->cfg.reload(ctl->cfg.data);
		}
		return;
	}
	finish(cl, false, "unknown request");
}

static void client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ctl_client *cl = h->data;

	(void)suggested;
	*buf = uv_buf_init(cl->line + cl->len, (unsigned)(sizeof(cl->line) - cl->len));
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_client *cl = s->data;
	char *nl;

	(void)buf;
	if (nread < 0) {
		client_close(cl);
		return;
	}
	cl->len += (size_t)nread;
	nl = memchr(cl->line, '\n', cl->len);
	if (nl) {
		request(cl, cl->line, (size_t)(nl - cl->line));
		return;
	}
	if (cl->len >= sizeof(cl->line)) {
		uv_read_stop(s);
		finish(cl, false, "request line too long");
	}
}

/* Root only: the peer's uid as the kernel saw it when it connected. */
static int peer_uid(uv_pipe_t *p, uint32_t *ret)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)p, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr))
		return -EACCES;
	*ret = (uint32_t)cr.uid;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct sl_gw_control *ctl = server->data;
	struct ctl_client *cl;

	if (status < 0 || ctl->stopped)
		return;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return;
	cl->ctl = ctl;
	uv_pipe_init(server->loop, &cl->pipe, 0);
	uv_timer_init(server->loop, &cl->timer);
	cl->pipe.data = cl->timer.data = cl;
	ctl->open += 2;
	cl->handles = 2;
	cl->next = ctl->clients;
	if (ctl->clients)
		ctl->clients->prev = cl;
	ctl->clients = cl;
	ctl->n_clients++;
	if (uv_accept(server, (uv_stream_t *)&cl->pipe) < 0) {
		client_close(cl);
		return;
	}
	if (peer_uid(&cl->pipe, &cl->uid) < 0)
		cl->uid = UINT32_MAX;
	if (cl->uid != 0) {
		fprintf(stderr,
			"sluice gateway: control socket: refused a client of uid %ld (root only)\n",
			cl->uid == UINT32_MAX ? -1L : (long)cl->uid);
		finish(cl, false, "permission denied: the control socket is root's");
		return;
	}
	if (ctl->n_clients > MAX_CLIENTS) {
		finish(cl, false, "busy: too many control clients at once");
		return;
	}
	uv_timer_start(&cl->timer, client_timeout, CLIENT_MS, 0);
	if (uv_read_start((uv_stream_t *)&cl->pipe, client_alloc, client_read) < 0)
		client_close(cl);
}

int sl_gw_control_start(struct sl_gw *gw, int listen_fd, const struct sl_gw_control_cfg *cfg,
			struct sl_gw_control **ret)
{
	struct sl_gw_control *ctl = calloc(1, sizeof(*ctl));
	int r;

	if (!ctl)
		return -ENOMEM;
	ctl->gw = gw;
	ctl->cfg = *cfg;
	uv_pipe_init(gw->loop, &ctl->listener, 0);
	ctl->listener.data = ctl;
	ctl->open = 1;
	ctl->listening = true;
	r = uv_pipe_open(&ctl->listener, listen_fd);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&ctl->listener, 16, on_connection);
	if (r < 0) {
		sl_gw_control_stop(ctl);
		return r;
	}
	*ret = ctl;
	return 0;
}

static void listener_closed(uv_handle_t *h)
{
	struct sl_gw_control *ctl = h->data;

	ctl->open--;
	maybe_free(ctl);
}

void sl_gw_control_reloaded(struct sl_gw_control *ctl, bool ok, const char *text)
{
	struct ctl_client *cl = ctl ? ctl->reloading : NULL;
	char esc[600];

	if (!ctl)
		return;
	ctl->reload_busy = false;
	if (!cl)
		return;
	ctl->reloading = NULL;
	/* Each line of what the reload said, escaped: a policy's messages
	 * quote the file, which may hold anything. */
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);

		if (n)
			data_line(cl, sl_ctl_escape(text, n, true, esc, sizeof(esc)));
		text += n + (nl ? 1 : 0);
	}
	finish(cl, ok, ok ? "reloaded" : "not reloaded; the running policy stays in force");
}

void sl_gw_control_stop(struct sl_gw_control *ctl)
{
	if (!ctl || ctl->stopped)
		return;
	ctl->stopped = true;
	while (ctl->clients)
		client_close(ctl->clients);
	if (ctl->listening) {
		ctl->listening = false;
		uv_close((uv_handle_t *)&ctl->listener, listener_closed);
	}
}
