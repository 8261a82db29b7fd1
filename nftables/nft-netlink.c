/* SPDX-License-Identifier: MIT */
/*
 * The one place that talks to the kernel about nftables: it owns the
 * NETLINK_NETFILTER socket, sends each plan as one BEGIN...END batch, reads
 * every ACK, and turns the first error (with the kernel's extended ACK) into
 * a message naming the operation that failed.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/gen.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "macro.h"
#include "nft-internal.h"

/* One operation's message never comes near this (our largest rule is under
 * 1 KiB); the batch buffer gives each op this much room. */
#define OP_ROOM 4096
#define RECV_SIZE 65536
/* The kernel answers a batch while it is being sent (the ACKs are queued
 * before sendmsg returns); this only bounds a wait that should not happen. */
#define ACK_TIMEOUT_MS 5000
/* What one ACK may take of the receive buffer (its skb's truesize, with
 * room to spare; the kernel doubles what is asked for besides). */
#define ACK_ROOM 1024

int sl_nft_open(struct sl_nft **ret, char *err, size_t errlen)
{
	_cleanup_free_ struct sl_nft *nft = calloc(1, sizeof(*nft));
	int one = 1;

	if (!nft)
		return -ENOMEM;
	nft->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nft->nl) {
		int r = negative_errno();

		sl_nft_set_err(err, errlen, "opening the nftables netlink socket: %s",
			       strerror(-r));
		return r;
	}
	if (mnl_socket_bind(nft->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = negative_errno();

		sl_nft_set_err(err, errlen, "binding the nftables netlink socket: %s",
			       strerror(-r));
		mnl_socket_close(nft->nl);
		return r;
	}
	/* Extended ACKs carry the kernel's reason; capped ACKs do not echo our
	 * whole request back. Both are best effort: old kernels lack them. */
	(void)mnl_socket_setsockopt(nft->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)mnl_socket_setsockopt(nft->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	nft->portid = mnl_socket_get_portid(nft->nl);
	nft->seq = (uint32_t)time(NULL);
	*ret = TAKE_PTR(nft);
	return 0;
}

int sl_nft_fd(const struct sl_nft *nft)
{
	return nft ? mnl_socket_get_fd(nft->nl) : -1;
}

void sl_nft_close(struct sl_nft *nft)
{
	if (!nft)
		return;
	mnl_socket_close(nft->nl);
	free(nft);
}

/* ---- Error reporting ---- */

struct ack_err {
	int error;              /* negative errno, 0 if none yet */
	char msg[160];          /* NLMSGERR_ATTR_MSG */
	uint32_t offs;          /* NLMSGERR_ATTR_OFFS, 0 if none */
};

static void parse_ext_ack(const struct nlmsghdr *nlh, struct ack_err *ae)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	size_t off = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	/* Without NETLINK_CAP_ACK the kernel echoes the request first. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (mnl_nlmsg_get_payload_len(nlh) < off)
		return;
	mnl_attr_for_each(attr, nlh, off) {
		switch (mnl_attr_get_type(attr)) {
		case NLMSGERR_ATTR_MSG:
			if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
				snprintf(ae->msg, sizeof(ae->msg), "%s", mnl_attr_get_str(attr));
			break;
		case NLMSGERR_ATTR_OFFS:
			if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0)
				ae->offs = mnl_attr_get_u32(attr);
			break;
		default:
			break;
		}
	}
}

/* The kernel may point at the attribute it refused (an offset into the
 * message we sent). For a rule, name the expression it lies in. */
static void describe_offset(const struct nlmsghdr *sent, uint32_t offs, char *buf, size_t len)
{
	const struct nlattr *attr, *elem, *a;

	buf[0] = '\0';
	if (!sent || !offs || offs >= sent->nlmsg_len)
		return;
	if ((sent->nlmsg_type & 0xff) != NFT_MSG_NEWRULE)
		return;
	mnl_attr_for_each(attr, sent, sizeof(struct nfgenmsg)) {
		uint32_t start = (uint32_t)((const char *)attr - (const char *)sent);
		unsigned n = 0;

		if (offs < start || offs >= start + attr->nla_len)
			continue;
		if (mnl_attr_get_type(attr) != NFTA_RULE_EXPRESSIONS)
			return;
		mnl_attr_for_each_nested(elem, attr) {
			uint32_t es = (uint32_t)((const char *)elem - (const char *)sent);

			n++;
			if (offs < es || offs >= es + elem->nla_len)
				continue;
			mnl_attr_for_each_nested(a, elem) {
				if (mnl_attr_get_type(a) == NFTA_EXPR_NAME &&
				    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0) {
					snprintf(buf, len, "; in expression %u '%s'", n,
						 mnl_attr_get_str(a));
					return;
				}
			}
		}
		return;
	}
}

/* ---- Batches ---- */

static uint16_t op_msg(enum sl_nft_op_type type, uint16_t *flags)
{
	*flags = NLM_F_ACK;
	switch (type) {
	case SL_NFT_OP_ADD_TABLE:
		*flags |= NLM_F_CREATE;
		return NFT_MSG_NEWTABLE;
	case SL_NFT_OP_DEL_TABLE:
		return NFT_MSG_DELTABLE;
	case SL_NFT_OP_ADD_CHAIN:
		*flags |= NLM_F_CREATE;
		return NFT_MSG_NEWCHAIN;
	case SL_NFT_OP_FLUSH_CHAIN:
		return NFT_MSG_DELRULE;
	case SL_NFT_OP_DEL_CHAIN:
		return NFT_MSG_DELCHAIN;
	case SL_NFT_OP_ADD_RULE:
		*flags |= NLM_F_CREATE | NLM_F_APPEND;
		return NFT_MSG_NEWRULE;
	case SL_NFT_OP_ADD_OBJ:
		*flags |= NLM_F_CREATE;
		return NFT_MSG_NEWOBJ;
	}
	return 0;
}

/* Serialises `plan` into buf; msgs[i] is where op i's message starts. */
static int build_batch(const struct sl_nft_plan *plan, uint32_t seq0, const uint32_t *genid,
		       char *buf, size_t size, const struct nlmsghdr **msgs, size_t *ret_len)
{
	struct nlmsghdr *nlh;
	size_t off = 0;

	nlh = nftnl_batch_begin(buf, seq0);
	/* With a generation, the kernel refuses the batch (ERESTART) if the
	 * ruleset changed since we looked at it. */
	if (genid)
		mnl_attr_put_u32(nlh, NFNL_BATCH_GENID, htonl(*genid));
	off += NLMSG_ALIGN(nlh->nlmsg_len);

	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct sl_nft_op *op = &plan->ops[i];
		uint16_t flags, type = op_msg(op->type, &flags);

		if (size - off < 2 * OP_ROOM)
			return -E2BIG;
		nlh = nftnl_nlmsg_build_hdr(buf + off, type, op->family, flags,
					    seq0 + 1 + (uint32_t)i);
		if (op->table)
			nftnl_table_nlmsg_build_payload(nlh, op->table);
		else if (op->chain)
			nftnl_chain_nlmsg_build_payload(nlh, op->chain);
		else if (op->obj)
			nftnl_obj_nlmsg_build_payload(nlh, op->obj);
		else
			nftnl_rule_nlmsg_build_payload(nlh, op->rule);
		if (nlh->nlmsg_len > OP_ROOM)
			return -E2BIG;
		msgs[i] = nlh;
		off += NLMSG_ALIGN(nlh->nlmsg_len);
	}
	nlh = nftnl_batch_end(buf + off, seq0 + 1 + (uint32_t)plan->n_ops);
	off += NLMSG_ALIGN(nlh->nlmsg_len);
	*ret_len = off;
	return 0;
}

struct batch_state {
	uint32_t seq0;
	size_t n_ops;
	size_t n_acked;
	ssize_t failed;  /* op index of the first error, -1 for the batch */
	bool batch_err;  /* an error on BEGIN/END: nothing more will come */
	struct ack_err ae;
};

static void batch_ack(struct batch_state *st, const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e;
	uint32_t seq;

	if (nlh->nlmsg_type != NLMSG_ERROR ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(struct nlmsgerr))
		return;
	e = mnl_nlmsg_get_payload(nlh);
	seq = nlh->nlmsg_seq;
	if (seq > st->seq0 && seq <= st->seq0 + st->n_ops) {
		st->n_acked++;
		if (e->error && !st->ae.error) {
			st->ae.error = e->error < 0 ? e->error : -e->error;
			st->failed = (ssize_t)(seq - st->seq0 - 1);
			parse_ext_ack(nlh, &st->ae);
		}
	} else if (seq == st->seq0 || seq == st->seq0 + st->n_ops + 1) {
		if (e->error) {
			st->batch_err = true;
			if (!st->ae.error) {
				st->ae.error = e->error < 0 ? e->error : -e->error;
				st->failed = -1;
				parse_ext_ack(nlh, &st->ae);
			}
		}
	}
}

/* Waits for the socket; 0 on data, -ETIMEDOUT, or another negative errno. */
static int wait_readable(struct sl_nft *nft, int timeout_ms)
{
	struct pollfd p = { .fd = mnl_socket_get_fd(nft->nl), .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return negative_errno();
	return r == 0 ? -ETIMEDOUT : 0;
}

static int read_acks(struct sl_nft *nft, struct batch_state *st)
{
	_cleanup_free_ char *buf = malloc(RECV_SIZE);

	if (!buf)
		return -ENOMEM;
	/* Every op asked for an ACK, so all of them answer, also after an
	 * error (the kernel reports each failing message, then aborts). Stop
	 * early only when there is nothing more to read after an error. */
	while (st->n_acked < st->n_ops && !st->batch_err) {
		const struct nlmsghdr *nlh;
		ssize_t n;
		int r = wait_readable(nft, st->ae.error ? 0 : ACK_TIMEOUT_MS);

		if (r == -ETIMEDOUT && st->ae.error)
			break;
		if (r < 0)
			return r;
		n = mnl_socket_recvfrom(nft->nl, buf, RECV_SIZE);
		if (n < 0)
			return negative_errno();
		nlh = (const struct nlmsghdr *)buf;
		for (int len = (int)n; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
			batch_ack(st, nlh);
	}
	return 0;
}

/* Grow one of the socket's buffers to at least `want` bytes (the kernel
 * reports and keeps twice what is set). The FORCE option is past
 * net.core.[rw]mem_max, for CAP_NET_ADMIN, which whoever sends a batch has;
 * without it, the plain one, as far as the maximum lets it. */
static void grow_buffer(int fd, int opt, int force_opt, size_t want)
{
	int cur = 0, v;
	socklen_t len = sizeof(cur);

	if (want > (size_t)(INT32_MAX / 2))
		want = INT32_MAX / 2;
	if (getsockopt(fd, SOL_SOCKET, opt, &cur, &len) == 0 && cur > 0 && (size_t)cur >= want)
		return;
	v = (int)want;
	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

/* A batch of many rules (one per captured port, up to
 * SL_NFT_MAX_CAPTURE_PORTS) outgrows a socket's default buffers: the
 * kernel refuses a send longer than the send buffer (EMSGSIZE), and drops
 * the ACKs that do not fit the receive buffer (ENOBUFS: the batch is
 * committed, its answer lost). Both are made to fit first, as nft(8) does. */
static void fit_buffers(struct sl_nft *nft, size_t send_len, size_t n_acks)
{
	int fd = mnl_socket_get_fd(nft->nl);

	grow_buffer(fd, SO_SNDBUF, SO_SNDBUFFORCE, send_len + 4096);
	grow_buffer(fd, SO_RCVBUF, SO_RCVBUFFORCE, n_acks * ACK_ROOM + RECV_SIZE);
}

int sl_nft_send_plan(struct sl_nft *nft, const struct sl_nft_plan *plan, const uint32_t *genid,
		     ssize_t *ret_failed_op, char *err, size_t errlen)
{
	size_t size = (plan->n_ops + 4) * OP_ROOM, len = 0;
	_cleanup_free_ const struct nlmsghdr **msgs = calloc(plan->n_ops + 1, sizeof(*msgs));
	_cleanup_free_ char *buf = calloc(1, size);
	struct batch_state st = { .n_ops = plan->n_ops, .failed = -1 };
	char where[96];
	int r;

	if (!buf || !msgs)
		return -ENOMEM;
	if (!plan->n_ops)
		return 0;
	st.seq0 = nft->seq;
	nft->seq += (uint32_t)plan->n_ops + 2;
	r = build_batch(plan, st.seq0, genid, buf, size, msgs, &len);
	if (r < 0) {
		sl_nft_set_err(err, errlen, "building the nftables batch: %s", strerror(-r));
		return r;
	}
	fit_buffers(nft, len, plan->n_ops + 2);
	/* One sendmsg: the kernel takes a batch only whole, from one skb. */
	if (mnl_socket_sendto(nft->nl, buf, len) < 0) {
		r = negative_errno();
		sl_nft_set_err(err, errlen, "sending the nftables batch (%s...): %s",
			       plan->ops[0].what, strerror(-r));
		return r;
	}
	r = read_acks(nft, &st);
	if (r < 0) {
		sl_nft_set_err(err, errlen, "reading the kernel's answer to the nftables batch: %s",
			       strerror(-r));
		return r;
	}
	if (!st.ae.error)
		return 0;

	describe_offset(st.failed >= 0 ? msgs[st.failed] : NULL, st.ae.offs, where,
			sizeof(where));
	sl_nft_set_err(err, errlen, "installing %s: %s%s%s%s",
		       st.failed >= 0 ? plan->ops[st.failed].what : "the nftables batch",
		       strerror(-st.ae.error), st.ae.msg[0] ? " (kernel: " : "", st.ae.msg,
		       st.ae.msg[0] ? ")" : "");
	if (where[0] && err && errlen) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l, "%s", where);
	}
	if (ret_failed_op)
		*ret_failed_op = st.failed;
	return st.ae.error;
}

/* ---- Requests (dumps and gets) ---- */

int sl_nft_request(struct sl_nft *nft, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	_cleanup_free_ char *buf = malloc(RECV_SIZE);
	uint32_t seq = nlh->nlmsg_seq;

	if (!buf)
		return -ENOMEM;
	if (mnl_socket_sendto(nft->nl, nlh, nlh->nlmsg_len) < 0)
		return negative_errno();
	for (;;) {
		ssize_t n;
		int r = wait_readable(nft, ACK_TIMEOUT_MS);

		if (r < 0)
			return r;
		n = mnl_socket_recvfrom(nft->nl, buf, RECV_SIZE);
		if (n < 0)
			return negative_errno();
		/* mnl_cb_run checks seq and portid, handles DONE and errors. */
		r = mnl_cb_run(buf, (size_t)n, seq, nft->portid, cb, data);
		if (r < 0)
			return negative_errno();
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static int gen_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_gen *gen = nftnl_gen_alloc();
	int r = MNL_CB_ERROR;

	if (!gen)
		return MNL_CB_ERROR;
	if (nftnl_gen_nlmsg_parse(nlh, gen) >= 0) {
		*(uint32_t *)data = nftnl_gen_get_u32(gen, NFTNL_GEN_ID);
		r = MNL_CB_OK;
	}
	nftnl_gen_free(gen);
	return r;
}

int sl_nft_get_genid(struct sl_nft *nft, uint32_t *ret_genid, char *err, size_t errlen)
{
	char buf[256];
	struct nlmsghdr *nlh;
	uint32_t genid = 0;
	int r;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETGEN, NFPROTO_UNSPEC, NLM_F_ACK, nft->seq++);
	r = sl_nft_request(nft, nlh, gen_cb, &genid);
	if (r < 0) {
		sl_nft_set_err(err, errlen, "reading the nftables generation: %s", strerror(-r));
		return r;
	}
	*ret_genid = genid;
	return 0;
}

struct chain_list {
	const char *table;
	char **names;
	size_t n;
	int error;
};

void sl_nft_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct chain_list *cl = data;
	struct nftnl_chain *c = nftnl_chain_alloc();
	const char *table, *name;
	char **v;

	if (!c)
		goto oom;
	if (nftnl_chain_nlmsg_parse(nlh, c) < 0) {
		nftnl_chain_free(c);
		return MNL_CB_OK; /* not ours to understand; skip it */
	}
	table = nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE);
	name = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);
	if (nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY) != NFPROTO_INET || !table || !name ||
	    strcmp(table, cl->table)) {
		nftnl_chain_free(c);
		return MNL_CB_OK;
	}
	v = reallocarray(cl->names, cl->n + 2, sizeof(*v));
	if (!v)
		goto oom;
	cl->names = v;
	v[cl->n] = strdup(name);
	v[cl->n + 1] = NULL;
	nftnl_chain_free(c);
	if (!v[cl->n])
		goto oom_nochain;
	cl->n++;
	return MNL_CB_OK;
oom:
	if (c)
		nftnl_chain_free(c);
oom_nochain:
	cl->error = -ENOMEM;
	return MNL_CB_ERROR;
}

int sl_nft_list_chains(struct sl_nft *nft, const char *table, char ***ret_names, char *err,
		       size_t errlen)
{
	struct chain_list cl = { .table = table };
	char buf[256];
	struct nlmsghdr *nlh;
	int r;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETCHAIN, NFPROTO_INET, NLM_F_DUMP, nft->seq++);
	r = sl_nft_request(nft, nlh, chain_cb, &cl);
	if (cl.error < 0)
		r = cl.error;
	if (r < 0) {
		sl_nft_strv_free(cl.names);
		sl_nft_set_err(err, errlen, "listing the chains of table inet %s: %s", table,
			       strerror(-r));
		return r;
	}
	if (!cl.names) {
		sl_nft_set_err(err, errlen, "table inet %s does not exist or is empty", table);
		return -ENOENT;
	}
	*ret_names = cl.names;
	return 0;
}

static int obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_obj *o = nftnl_obj_alloc();
	int r = MNL_CB_ERROR;

	if (!o)
		return MNL_CB_ERROR;
	if (nftnl_obj_nlmsg_parse(nlh, o) >= 0 &&
	    nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) == NFT_OBJECT_COUNTER) {
		*(uint64_t *)data = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS);
		r = MNL_CB_OK;
	}
	nftnl_obj_free(o);
	return r;
}

int sl_nft_get_counter(struct sl_nft *nft, const char *table, const char *name,
		       uint64_t *ret_packets, char *err, size_t errlen)
{
	struct nftnl_obj *o = sl_nft_counter_new(table, name);
	char buf[512];
	struct nlmsghdr *nlh;
	uint64_t packets = 0;
	int r;

	if (!o)
		return -ENOMEM;
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETOBJ, NFPROTO_INET, NLM_F_ACK, nft->seq++);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nftnl_obj_free(o);
	r = sl_nft_request(nft, nlh, obj_cb, &packets);
	if (r < 0) {
		sl_nft_set_err(err, errlen, "reading counter '%s' of table inet %s: %s", name, table,
			       strerror(-r));
		return r;
	}
	*ret_packets = packets;
	return 0;
}
