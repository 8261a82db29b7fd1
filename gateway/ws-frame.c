/* SPDX-License-Identifier: MIT */
/* A websocket's frames, cut as they come; the contract is in ws-frame.h. */
#include <errno.h>

#include "ws-frame.h"

/* The header's length once its first two bytes are known (and, for the
 * 64-bit length, its third), or -EPROTO. */
static int head_need(const struct sl_ws_frames *w)
{
	unsigned op = w->head[0] & 0x0f, k = w->head[1] & 0x7f;
	int fin = w->head[0] & 0x80;

	if ((w->head[0] & 0x70) || (w->head[1] & 0x80))
		return -EPROTO;
	if (op & 0x08) {
		if (op > SL_WS_OP_PONG || !fin || k > SL_WS_CONTROL_MAX)
			return -EPROTO;
	} else if (op > SL_WS_OP_BINARY || (op == SL_WS_OP_CONT) != (w->in_message != 0)) {
		return -EPROTO;
	}
	if (k == 127 && w->head_len >= 3 && (w->head[2] & 0x80))
		return -EPROTO;
	return k == 126 ? 4 : k == 127 ? 10 : 2;
}

int sl_ws_frames_feed(struct sl_ws_frames *w, const void *p, size_t n, sl_ws_head_fn *head,
		      sl_ws_payload_fn *payload, void *userdata)
{
	const uint8_t *b = p;
	int r;

	if (w->error)
		return w->error;
	while (n > 0) {
		struct sl_ws_head h;
		size_t k;
		int need;

		if (w->left == 0) {
			w->head[w->head_len++] = *b++;
			n--;
			if (w->head_len < 2)
				continue;
			if ((need = head_need(w)) < 0)
				return w->error = need;
			if (w->head_len < (size_t)need)
				continue;
			h.fin = (w->head[0] & 0x80) != 0;
			h.opcode = w->head[0] & 0x0f;
			h.len = w->head[1] & 0x7f;
			if (h.len >= 126)
				for (h.len = 0, k = 2; k < (size_t)need; k++)
					h.len = h.len << 8 | w->head[k];
			if (!(h.opcode & 0x08))
				w->in_message = !h.fin;
			w->head_len = 0;
			w->left = h.len;
			r = head(userdata, &h);
			if (r == 0 && h.len == 0)
				r = payload(userdata, b, 0, 1);
			if (r < 0)
				return w->error = r;
			continue;
		}
		k = n < w->left ? n : (size_t)w->left;
		w->left -= k;
		if ((r = payload(userdata, b, k, w->left == 0)) < 0)
			return w->error = r;
		b += k;
		n -= k;
	}
	return 0;
}
