/* SPDX-License-Identifier: MIT */
/*
 * The control socket's server (docs/control.md), in the gateway's own
 * loop: the confined gateway serves it from a listening socket its
 * starter (root) bound under /run/sluice/ctl before it confined itself.
 * Each client's uid is checked (SO_PEERCRED: root only, whatever the
 * file's mode) before a byte of it is read; a client is one request
 * (control-proto.h), answered, then closed.
 *
 * What it can do is what the gateway can: say what it serves (`sluice
 * ps`), list and answer approval holds (approve.h), and ask its starter
 * for a reload of the operator's own policy file (cfg.reload), whose
 * answer comes back through sl_gw_control_reloaded().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sl_gw;
struct sl_gw_control;

struct sl_gw_control_cfg {
	const char *name;	 /* the sandbox's (or --sandbox's) name */
	const char *policy_path; /* NULL: none (everything denied) */
	long pid;		 /* the supervisor's, or sluice gateway's own */
	long gateway_pid;	 /* this process's */
	uint64_t started_s;	 /* wall clock, seconds since the epoch */
	/* Start a reload as SIGHUP does; its outcome comes back through
	 * sl_gw_control_reloaded(). NULL: reloads are refused. */
	void (*reload)(void *data);
	void *data;
};

/* Serve on listen_fd (taken: closed at stop). Strings in cfg are
 * borrowed and must outlive the server. 0, or a negative errno. */
int sl_gw_control_start(struct sl_gw *gw, int listen_fd, const struct sl_gw_control_cfg *cfg,
			struct sl_gw_control **ret);
/* The reload asked for is done: ok, and text (lines, maybe NULL): what
 * the reload said, file:line errors included. */
void sl_gw_control_reloaded(struct sl_gw_control *ctl, bool ok, const char *text);
/* Close the listener and every client; freed once their handles are. */
void sl_gw_control_stop(struct sl_gw_control *ctl);
