/* SPDX-License-Identifier: MIT */
/* A websocket's frames, cut as they come; the contract is in ws-frame.h. */
#include <errno.h>

#include "ws-frame.h"

/* The header's length once its second byte is known (and, for the 64-bit
 * length, its third), or -EPROTO. */
static int head_need(const struct sl_ws_frames *w)
{
	unsigned k = w->head[1] & 0x7f;

	if (w->head[1] & 0x80)
		return -EPROTO;
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
		size_t k;

		if (w->left == 0) {
			int need;

			w->head[w->head_len++] = *b++;
			n--;
			if (w->head_len < 2)
				continue;
			if ((need = head_need(w)) < 0)
				return w->error = need;
			if (w->head_len < (size_t)need)
				continue;
			k = w->head[1] & 0x7f;
			if (k < 126) {
				w->left = k;
			} else {
				for (k = 2; k < (size_t)need; k++)
					w->left = w->left << 8 | w->head[k];
			}
			r = head(userdata, w->head, w->head_len);
			w->head_len = 0;
			if (r == 0 && w->left == 0)
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
