/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: the BIO under each SSL, a byte queue in a buffer we own
 * (struct insp_q). OpenSSL's memory BIO would take every record in with a
 * copy and give it out with another: libuv reads straight into a queue's
 * free tail, and writes straight from it, so a record is copied only by
 * OpenSSL itself. The bottom of inspection's layers: it calls none of the
 * others.
 */
#include <errno.h>
#include <openssl/bio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inspect-internal.h"

static BIO_METHOD *q_method;
static pthread_once_t q_once = PTHREAD_ONCE_INIT;

int insp_q_reserve(struct insp_q *q, size_t room)
{
	size_t need = q->len + room, cap;
	char *p;

	if (q->cap - q->off - q->len >= room)
		return 0;
	if (q->cap >= need) {
		/* Room enough once what was read is dropped from the front. */
		memmove(q->p, q->p + q->off, q->len);
		q->off = 0;
		return 0;
	}
	cap = q->cap ? q->cap * 2 : q->min_cap ? q->min_cap : 4096;
	while (cap < need)
		cap *= 2;
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	if (q->len)
		memcpy(p, q->p + q->off, q->len);
	free(q->p);
	q->p = p;
	q->cap = cap;
	q->off = 0;
	return 0;
}

void insp_q_consume(struct insp_q *q, size_t n)
{
	q->off += n;
	q->len -= n;
	if (q->len == 0)
		q->off = 0;
}

void insp_q_release(struct insp_q *q)
{
	char *p;

	if (q->len == 0) {
		free(q->p);
		q->p = NULL;
		q->off = q->cap = 0;
		return;
	}
	/* A partial record waits for its end: in a buffer of its size, not
	 * in the whole read's (many connections can each have one). */
	if (q->cap <= 4096 || q->len > q->cap / 4 || !(p = malloc(q->len)))
		return;
	memcpy(p, q->p + q->off, q->len);
	free(q->p);
	q->p = p;
	q->off = 0;
	q->cap = q->len;
}

void insp_q_free(struct insp_q *q)
{
	free(q->p);
	q->p = NULL;
	q->off = q->len = q->cap = 0;
}

char *insp_q_take(struct insp_q *q, size_t *ret_len)
{
	char *p = q->p;

	if (q->off)
		memmove(p, p + q->off, q->len);
	*ret_len = q->len;
	q->p = NULL;
	q->off = q->len = q->cap = 0;
	return p;
}

/* ---- the BIO ---- */

static int q_write(BIO *b, const char *p, size_t n, size_t *written)
{
	struct insp_q *q = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (insp_q_reserve(q, n) < 0)
		return 0;
	memcpy(q->p + q->off + q->len, p, n);
	q->len += n;
	*written = n;
	return 1;
}

static int q_read(BIO *b, char *p, size_t n, size_t *got)
{
	struct insp_q *q = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (q->len == 0) {
		/* Nothing yet: come back once libuv has read more. */
		BIO_set_retry_read(b);
		return 0;
	}
	if (n > q->len)
		n = q->len;
	memcpy(p, q->p + q->off, n);
	insp_q_consume(q, n);
	*got = n;
	return 1;
}

static long q_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct insp_q *q = BIO_get_data(b);

	(void)num;
	(void)ptr;
	switch (cmd) {
	case BIO_CTRL_PENDING:
		return (long)q->len;
	case BIO_CTRL_WPENDING:
		return 0; /* what is written is in the queue, ours to send */
	case BIO_CTRL_FLUSH:
		return 1;
	default:
		return 0;
	}
}

static int q_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static void q_method_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice queue");

	if (m && (!BIO_meth_set_write_ex(m, q_write) || !BIO_meth_set_read_ex(m, q_read) ||
		  !BIO_meth_set_ctrl(m, q_ctrl) || !BIO_meth_set_create(m, q_create))) {
		BIO_meth_free(m);
		m = NULL;
	}
	q_method = m;
}

BIO *insp_q_bio(struct insp_q *q)
{
	BIO *b;

	if (pthread_once(&q_once, q_method_init) != 0 || !q_method)
		return NULL;
	b = BIO_new(q_method);
	if (b)
		BIO_set_data(b, q);
	return b;
}
