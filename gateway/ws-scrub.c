/* SPDX-License-Identifier: MIT */
/* A websocket scrubbed and framed again; the contract is in ws-scrub.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ws-scrub.h"

/* Our frames are never longer than out (or a control frame): a 7- or
 * 16-bit length always does. */
_Static_assert(SL_WS_SCRUB_OUT_CAP <= 0xffff, "a frame of ours has a 16-bit length at most");

static int put_head(struct sl_ws_scrub *w, int fin, uint8_t op, size_t len)
{
	uint8_t h[4];
	size_t n = 2;

	h[0] = (uint8_t)((fin ? 0x80 : 0) | op);
	if (len < 126) {
		h[1] = (uint8_t)len;
	} else {
		h[1] = 126;
		h[2] = (uint8_t)(len >> 8);
		h[3] = (uint8_t)len;
		n = 4;
	}
	return w->write(w->userdata, h, n);
}

/* What the scrubber let out of the message so far, as a frame; the final
 * one even when empty. */
static int send_out(struct sl_ws_scrub *w, int fin)
{
	int r;

	if (!fin && w->out_len == 0)
		return 0;
	r = put_head(w, fin, w->started ? SL_WS_OP_CONT : w->op, w->out_len);
	if (r == 0 && w->out_len)
		r = w->write(w->userdata, w->out, w->out_len);
	explicit_bzero(w->out, w->out_len);
	w->out_len = 0;
	w->started = !fin;
	return r;
}

static int collect(void *userdata, const void *p, size_t n)
{
	struct sl_ws_scrub *w = userdata;
	const char *b = p;

	while (n > 0) {
		size_t k = SL_WS_SCRUB_OUT_CAP - w->out_len;
		int r;

		if (k == 0) {
			if ((r = send_out(w, 0)) < 0)
				return r;
			continue;
		}
		if (k > n)
			k = n;
		memcpy(w->out + w->out_len, b, k);
		w->out_len += k;
		b += k;
		n -= k;
	}
	return 0;
}

static int ctl_collect(void *userdata, const void *p, size_t n)
{
	struct sl_ws_scrub *w = userdata;

	if (n > sizeof(w->ctl) - w->ctl_len)
		return -EIO; /* cannot be: markers keep the length */
	memcpy(w->ctl + w->ctl_len, p, n);
	w->ctl_len += n;
	return 0;
}

static int on_head(void *userdata, const struct sl_ws_head *h)
{
	struct sl_ws_scrub *w = userdata;

	w->frame = *h;
	w->ctl_len = 0;
	if (h->opcode & 0x08)
		return 0;
	if (!w->out && !(w->out = malloc(SL_WS_SCRUB_OUT_CAP)))
		return -ENOMEM;
	if (h->opcode != SL_WS_OP_CONT) {
		w->op = h->opcode;
		w->started = false;
	}
	return 0;
}

/* A close from the origin: the message it cut short is dropped. */
static void closed(struct sl_ws_scrub *w)
{
	w->closed = true;
	sl_scrub_reset(w->scrub);
	if (w->out)
		explicit_bzero(w->out, w->out_len);
	w->out_len = 0;
}

static int control(struct sl_ws_scrub *w)
{
	uint8_t raw[SL_WS_CONTROL_MAX];
	size_t n = w->ctl_len;
	int r;

	memcpy(raw, w->ctl, n);
	w->ctl_len = 0;
	r = sl_scrub_whole(w->scrub, raw, n, ctl_collect, w);
	explicit_bzero(raw, sizeof(raw));
	if (r == 0 && w->ctl_len != n)
		r = -EIO; /* cannot be: markers keep the length */
	if (r == 0 && w->frame.opcode == SL_WS_OP_CLOSE)
		closed(w);
	if (r == 0)
		r = put_head(w, 1, w->frame.opcode, n);
	if (r == 0 && n)
		r = w->write(w->userdata, w->ctl, n);
	explicit_bzero(w->ctl, sizeof(w->ctl));
	w->ctl_len = 0;
	return r;
}

static int on_payload(void *userdata, const void *p, size_t len, int end)
{
	struct sl_ws_scrub *w = userdata;
	int r;

	if (w->closed)
		return 0; /* the origin's frames after its close: dropped */
	if (w->frame.opcode & 0x08) {
		memcpy(w->ctl + w->ctl_len, p, len); /* ws-frame.c: <= 125 in all */
		w->ctl_len += len;
		return end ? control(w) : 0;
	}
	r = len ? sl_scrub_feed(w->scrub, p, len, collect, w) : 0;
	if (r == 0 && end && w->frame.fin) {
		r = sl_scrub_finish(w->scrub, collect, w);
		return r < 0 ? r : send_out(w, 1);
	}
	return r < 0 ? r : send_out(w, 0);
}

void sl_ws_scrub_init(struct sl_ws_scrub *w, struct sl_scrub *scrub, sl_ws_scrub_write_fn *write,
		      void *userdata)
{
	memset(w, 0, sizeof(*w));
	w->scrub = scrub;
	w->write = write;
	w->userdata = userdata;
}

int sl_ws_scrub_feed(struct sl_ws_scrub *w, const void *p, size_t n)
{
	return sl_ws_frames_feed(&w->frames, p, n, on_head, on_payload, w);
}

int sl_ws_scrub_flush(struct sl_ws_scrub *w, bool finish)
{
	int r;

	if (!w->out || w->closed)
		return 0;
	r = finish ? sl_scrub_finish(w->scrub, collect, w) : sl_scrub_flush(w->scrub, collect, w);
	return r < 0 ? r : send_out(w, 0);
}

void sl_ws_scrub_free(struct sl_ws_scrub *w)
{
	if (w->out) {
		explicit_bzero(w->out, SL_WS_SCRUB_OUT_CAP);
		free(w->out);
	}
	explicit_bzero(w, sizeof(*w));
}
