/* SPDX-License-Identifier: MIT */
/*
 * The policy: what a sandbox may reach.
 *
 * A policy is loaded once from YAML (version 1, see docs/policy.md), checked
 * completely, and then only read: sl_policy_decide() is pure and may be
 * called from any number of threads on the same policy. Nothing here does I/O
 * beyond reading the policy file; secrets are named, never read.
 *
 * Decisions: default deny; a matching deny rule beats every allow rule; among
 * allow rules the first in the file that matches decides (and so chooses the
 * credential to inject). Host lookup costs one hash probe per label of the
 * requested name, whatever the number of rules.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "host.h"
#include "path.h"

/* Policy files larger than this are refused before parsing. */
#define SL_POLICY_MAX_BYTES (4u << 20)

enum sl_rule_kind {
	SL_RULE_ALLOW,
	SL_RULE_DENY,
};

enum sl_secret_source {
	SL_SECRET_FILE,       /* a file sluice reads before dropping privileges */
	SL_SECRET_ENV,        /* a variable of sluice's own environment */
	SL_SECRET_CREDENTIAL, /* a systemd credential, in $CREDENTIALS_DIRECTORY */
};

/* The HTTP methods a rule can name (RFC 9110 section 9 plus PATCH). A
 * request with any other method matches only rules that name no methods. */
enum sl_method {
	SL_METHOD_GET = 1u << 0,
	SL_METHOD_HEAD = 1u << 1,
	SL_METHOD_POST = 1u << 2,
	SL_METHOD_PUT = 1u << 3,
	SL_METHOD_DELETE = 1u << 4,
	SL_METHOD_CONNECT = 1u << 5,
	SL_METHOD_OPTIONS = 1u << 6,
	SL_METHOD_TRACE = 1u << 7,
	SL_METHOD_PATCH = 1u << 8,
};

struct sl_secret {
	char *name;
	enum sl_secret_source source;
	char *ref; /* the file path, variable name or credential name */
	unsigned line, col;
};

struct sl_inject {
	char *header;          /* e.g. "x-api-key" */
	char *prefix;          /* e.g. "Bearer "; "" when none */
	size_t secret;         /* index into sl_policy.secrets */
	char *placeholder_env; /* variable set in the sandbox, or NULL */
	/* Refuse a request whose header does not hold prefix + SL_PLACEHOLDER. */
	bool require_placeholder;
};

/* What a placeholder_env variable holds in the sandbox; with
 * require_placeholder, what the request's header must hold. */
#define SL_PLACEHOLDER "sluice-placeholder-the-gateway-injects-the-key"

struct sl_path_pattern {
	char *path; /* normal form, without a trailing '*' */
	bool prefix;
};

struct sl_rule {
	enum sl_rule_kind kind;
	unsigned index; /* 1-based position among rules of its kind */
	unsigned line, col;
	char *name; /* optional `name:`; NULL when none */

	char host[SL_HOST_BUF]; /* normal form; the suffix for a wildcard */
	bool wildcard;
	enum sl_host_kind host_kind;

	uint16_t *ports; /* NULL: every port (deny rules without `ports`) */
	size_t n_ports;
	uint32_t methods; /* enum sl_method bits; 0: any method */
	struct sl_path_pattern *paths; /* NULL: any path */
	size_t n_paths;
	bool has_inject;
	struct sl_inject inject;

	/* The rule cannot be decided from host and port alone: it names
	 * methods, paths or a credential, so its traffic must be inspected. */
	bool inspect;
	/* `exact_dns: true` (wildcard allow rules only): the sandbox's DNS
	 * server answers no name under it (docs/policy.md, "dns"). */
	bool exact_dns;
	/* protocol: tcp: its ports carry another protocol than HTTP or TLS,
	 * relayed opaque once host and port are decided. Never with inspect. */
	bool opaque;
	/* `approve: true`: an allowed request waits, held, for a person's
	 * answer on the control socket (docs/control.md), at most
	 * approve_timeout_ms, then is denied. */
	bool approve;
	unsigned approve_timeout_ms;
};

struct sl_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned prefix;
};

struct sl_policy_index;

/* `mode:` (docs/observe.md). Observe lets through what the rules would
 * deny, audited "observe-deny"; only the rules' verdicts relax: SSRF
 * refusals, protocol checks, credential injection and the kernel's fence
 * stay as in enforce. Code that adds rules from the policy outside the
 * gateway (nftables' SYN-reject of ports no rule allows) must check
 * `p->mode == SL_MODE_OBSERVE` and add none. */
enum sl_policy_mode {
	SL_MODE_ENFORCE,
	SL_MODE_OBSERVE,
};

struct sl_policy {
	char *source; /* file name, for messages */
	struct sl_secret *secrets;
	size_t n_secrets;
	struct sl_rule *rules; /* allow rules, then deny rules, each in file order */
	size_t n_rules;
	size_t n_allow;
	/* private_addresses: false means `deny`; true means the listed ranges
	 * (which may be none) are reachable. */
	struct sl_cidr *private_allow;
	size_t n_private_allow;
	struct sl_policy_index *index;
	/* dns: new_names_per_minute; 0 when the policy does not say (then
	 * sl_policy_dns_new_names() gives the default). */
	unsigned dns_new_names;
	enum sl_policy_mode mode; /* `mode:`, or forced by --observe */
};

/* Errors found while loading, each "file:line:col: message". */
struct sl_diags {
	char **msgs;
	size_t n;
};

void sl_diags_clear(struct sl_diags *d);

/*
 * Load and check a policy. On success returns 0 and sets *ret. On failure
 * returns -EINVAL (the file is wrong: every problem found, up to a limit, is
 * in diags), or another negative errno (it could not be read; diags says
 * which file and why). diags may be NULL.
 */
int sl_policy_load_file(const char *path, struct sl_policy **ret, struct sl_diags *diags);
/* The same from a file already open for reading (whose place the caller
 * has checked: safe-file.h); name is what messages call it. fd stays the
 * caller's. */
int sl_policy_load_fd(int fd, const char *name, struct sl_policy **ret, struct sl_diags *diags);
/* Only the reading of sl_policy_load_fd (the same checks and messages):
 * the file's bytes in *ret_buf (malloc'd, NUL-terminated), *ret_len of
 * them, for sl_policy_load_buffer() here or in another process. */
int sl_policy_read_fd(int fd, const char *name, char **ret_buf, size_t *ret_len,
		      struct sl_diags *diags);
int sl_policy_load_buffer(const char *name, const char *buf, size_t len, struct sl_policy **ret,
			  struct sl_diags *diags);

/* The policy `run` uses without --policy: no rule, so every request is denied. */
int sl_policy_new_deny_all(struct sl_policy **ret);

void sl_policy_free(struct sl_policy *p);

/* Does the policy let the gateway connect to this address, which lies in a
 * private, loopback, link-local or otherwise special range? */
bool sl_policy_private_allowed(const struct sl_policy *p, int family, const void *addr);

/* ---- Decisions ---- */

struct sl_request {
	const char *host; /* as the client spelled it, without port */
	size_t host_len;
	uint16_t port;
	/* Method and request target, when known (an inspected or plain HTTP
	 * request). NULL for a decision on a connection: a CONNECT, an SNI, a
	 * DNS name. */
	const char *method;
	const char *path;
	size_t path_len;
};

enum sl_verdict {
	SL_VERDICT_DENY,
	SL_VERDICT_ALLOW,
	/* Observe mode: the rules deny it (reason and observed_rule say how),
	 * the gateway lets it through with no allow rule's rights (no
	 * credential, rule NULL). Anything that checks `== SL_VERDICT_ALLOW`
	 * treats it as a deny, which is the safe default. */
	SL_VERDICT_OBSERVE,
};

enum sl_reason {
	SL_REASON_ALLOWED,         /* an allow rule matched */
	SL_REASON_DENY_RULE,       /* a deny rule matched */
	SL_REASON_NO_RULE,         /* no rule names this host */
	SL_REASON_PORT,            /* rules name the host, not this port */
	SL_REASON_METHOD,          /* ... nor this method */
	SL_REASON_PATH,            /* ... nor this path */
	SL_REASON_INVALID_HOST,    /* the host is not a valid name or address */
	SL_REASON_INVALID_PATH,    /* the path is ambiguous (see path.h) */
	SL_REASON_INVALID_REQUEST, /* e.g. port 0, or a path without a method */
	_SL_REASON_MAX,
};

struct sl_decision {
	enum sl_verdict verdict;
	enum sl_reason reason;
	/* The rule that decided, or NULL for the default deny and for
	 * requests refused before any rule was looked at. */
	const struct sl_rule *rule;
	/* SL_VERDICT_OBSERVE: the deny rule that would have decided, NULL
	 * for the default deny. NULL for every other verdict. */
	const struct sl_rule *observed_rule;
	/* For an allowed connection: some rule for this host and port needs
	 * its requests inspected (methods, paths or a credential), or some
	 * rule for the host injects and this port is not `protocol: tcp`. */
	bool inspect;
	/* For invalid hosts, paths and requests: a static sentence saying
	 * what is wrong with it. NULL otherwise. */
	const char *detail;
	/* A request's path mattered: some rule's paths were compared with its
	 * normal form (which is then what the gateway forwards). */
	bool path_checked;
	/* Some allow or deny rule for this host (any port) names methods:
	 * a header that overrides the method must not get past them. */
	bool methods_named;
	/* Some allow rule for this host (any port) injects a credential: the
	 * agent's own credential headers are not passed on to it. */
	bool host_injects;
	char host[SL_HOST_BUF]; /* the normal form, "" when invalid */
	enum sl_host_kind host_kind;
};

/* Decide a request. Never fails: anything it cannot make sense of is
 * denied. In observe mode a request the rules deny (a deny rule, no rule,
 * or one that names the host but not this port, method or path) gets
 * SL_VERDICT_OBSERVE instead; one refused before any rule was looked at
 * (an invalid host, an ambiguous path, an invalid request) stays denied:
 * those are the gateway's own safety checks, not the policy's choices. */
void sl_policy_decide(const struct sl_policy *p, const struct sl_request *req,
		      struct sl_decision *ret);

/*
 * May the DNS server answer for this name (no port, no method known)? True
 * when sl_policy_decide() would allow a connection to the name on at least
 * one port: an allow rule names it on a port that no deny rule without
 * methods and paths takes. IP literals and invalid names are never allowed.
 */
bool sl_policy_name_allowed(const struct sl_policy *p, const char *host, size_t len);

/*
 * The wildcard allow rule whose DNS budget a lookup of this name spends:
 * NULL when an allow rule names the host exactly (the policy chose the
 * name, not the agent) or no allow rule matches it; otherwise the allow
 * rule of the longest matching suffix (the first such in the file).
 */
const struct sl_rule *sl_policy_name_wildcard(const struct sl_policy *p, const char *host,
					      size_t len);

/* Distinct new names under one wildcard rule the gateway may send to the
 * upstream resolver in any minute (`dns: new_names_per_minute`). */
#define SL_POLICY_DNS_NEW_NAMES_DEFAULT 60
#define SL_POLICY_DNS_NEW_NAMES_MAX 10000
/* approve_timeout: its default and its bounds, in seconds. */
#define SL_POLICY_APPROVE_TIMEOUT_DEFAULT 60
#define SL_POLICY_APPROVE_TIMEOUT_MAX 3600
unsigned sl_policy_dns_new_names(const struct sl_policy *p);

/*
 * Say why, in one line of printable ASCII that names the host, the port and
 * the deciding rule, for a 403 body and the audit log. Formatting is kept
 * out of sl_policy_decide() so that deciding stays cheap. Returns buf.
 */
const char *sl_policy_explain(const struct sl_policy *p, const struct sl_request *req,
			      const struct sl_decision *d, char *buf, size_t size);

const char *sl_reason_to_string(enum sl_reason r);

/* The audit record's rule for a decision: the deciding rule's id; for
 * SL_VERDICT_OBSERVE the one that would have decided, or "default" (what
 * `sluice learn` reads); NULL when no rule decided. buf as sl_rule_id's. */
const char *sl_decision_rule_id(const struct sl_decision *d, char *buf, size_t size);

/* "allow", "deny" or "observe-deny", as the audit log spells a verdict. */
const char *sl_verdict_to_string(enum sl_verdict v);

/* The suffix an observed name's DNS lookups are budgeted under, written
 * to buf (SL_HOST_BUF): its last two labels (a public suffix like co.uk
 * is then shared by every name under it: a tighter budget, never a
 * looser one). The name must be in normal form. */
void sl_policy_observe_suffix(const char *name, char *buf, size_t size);

/* "allow[2]", or the rule's name when it has one. */
const char *sl_rule_id(const struct sl_rule *r, char *buf, size_t size);

const char *sl_method_to_string(uint32_t bit);
/* The method bit for a method token, 0 for one we do not know. */
uint32_t sl_method_from_string(const char *s, size_t len);

static inline void sl_policy_freep(struct sl_policy **p)
{
	sl_policy_free(*p);
}

/* ---- The ports a policy can allow (ports.c) ---- */

/* The TCP ports any allow rule could allow, for whatever name: `all`
 * (every port: an allow rule without a port list, or a mode that must see
 * every connection), else ports[0..n), sorted and distinct (none for a
 * policy without an allow rule). */
struct sl_policy_ports {
	bool all;
	uint16_t *ports;
	size_t n;
};

int sl_policy_allowed_tcp_ports(const struct sl_policy *p, struct sl_policy_ports *ret);
void sl_policy_ports_done(struct sl_policy_ports *ports);

/* ---- What a reload may change (bindings.c) ---- */

/* Where a policy sends its secrets: for each inject rule, the secret's
 * name, the header and prefix it goes into, the host pattern and the
 * ports. A copy, independent of the policy it was taken from (which the
 * gateway frees when it likes), to compare a reload with. */
struct sl_policy_bindings;

int sl_policy_bindings_new(const struct sl_policy *p, struct sl_policy_bindings **ret);
void sl_policy_bindings_free(struct sl_policy_bindings *b);

/*
 * May p replace the policy b was taken from? A reload may change rules,
 * but every inject rule of p must send its secret only where b did: the
 * same secret into the same header (case-insensitive) with the same
 * prefix, on a host one of those patterns covers (the same pattern, or a
 * name or narrower wildcard below an earlier wildcard), on ports that
 * pattern named. Returns 0, or -EPERM with "file:line:col: why" in err.
 */
int sl_policy_bindings_check(const struct sl_policy_bindings *b, const struct sl_policy *p,
			     char *err, size_t errlen);
