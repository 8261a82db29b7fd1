/* SPDX-License-Identifier: MIT */
/* A websocket's frames, cut as they come, and the 101's accept for a key;
 * the contract is in ws-frame.h. */
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>

#include "ws-frame.h"

/* The header's length as far as its bytes so far tell (its first byte
 * alone: at least 2; then 2, 4 or 10, and 4 more with a mask), or
 * -EPROTO as soon as one of them is refused. */
static int head_need(const struct sl_ws_frames *w)
{
	unsigned op = w->head[0] & 0x0f, k;
	int fin = w->head[0] & 0x80;

	if (w->head[0] & 0x70)
		return -EPROTO;
	if (op & 0x08) {
		if (op > SL_WS_OP_PONG || !fin)
			return -EPROTO;
	} else if (op > SL_WS_OP_BINARY || (op == SL_WS_OP_CONT) != (w->in_message != 0)) {
		return -EPROTO;
	}
	if (w->head_len < 2)
		return 2;
	k = w->head[1] & 0x7f;
	if (!(w->head[1] & 0x80) != !w->client)
		return -EPROTO;
	if ((op & 0x08) && k > SL_WS_CONTROL_MAX)
		return -EPROTO;
	if (k == 127 && w->head_len >= 3 && (w->head[2] & 0x80))
		return -EPROTO;
	return (k == 126 ? 4 : k == 127 ? 10 : 2) + (w->client ? 4 : 0);
}

void sl_ws_frames_init(struct sl_ws_frames *w, int client)
{
	memset(w, 0, sizeof(*w));
	w->client = client != 0;
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
			size_t at;

			w->head[w->head_len++] = *b++;
			n--;
			if ((need = head_need(w)) < 0)
				return w->error = need;
			if (w->head_len < (size_t)need)
				continue;
			h.fin = (w->head[0] & 0x80) != 0;
			h.opcode = w->head[0] & 0x0f;
			h.len = w->head[1] & 0x7f;
			at = (size_t)need - (w->client ? 4 : 0);
			if (h.len >= 126)
				for (h.len = 0, k = 2; k < at; k++)
					h.len = h.len << 8 | w->head[k];
			memset(h.mask, 0, sizeof(h.mask));
			if (w->client)
				memcpy(h.mask, w->head + at, sizeof(h.mask));
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

int sl_ws_accept(const char *key, size_t len, char out[SL_WS_ACCEPT_LEN + 1])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char in[24 + sizeof(guid) - 1];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	size_t i;

	if (len != 24 || key[22] != '=' || key[23] != '=')
		return -EINVAL;
	for (i = 0; i < 22; i++)
		if (!((key[i] >= 'A' && key[i] <= 'Z') || (key[i] >= 'a' && key[i] <= 'z') ||
		      (key[i] >= '0' && key[i] <= '9') || key[i] == '+' || key[i] == '/'))
			return -EINVAL;
	memcpy(in, key, 24);
	memcpy(in + 24, guid, sizeof(guid) - 1);
	if (EVP_Digest(in, sizeof(in), md, &md_len, EVP_sha1(), NULL) != 1 || md_len != 20)
		return -EIO;
	/* 20 bytes make 28 characters, and the NUL. */
	if (EVP_EncodeBlock((unsigned char *)out, md, 20) != SL_WS_ACCEPT_LEN)
		return -EIO;
	return 0;
}
