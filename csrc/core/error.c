#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

rl_status rl_fail(rl_error *err, rl_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
        err->lost_reason = RL_LOST_NONE;
        err->hold_kept = 0;
        err->grace_left_ms = 0;
    }
    return status;
}

rl_status rl_fail_lost(rl_error *err, rl_lost_reason reason, const char *what, const char *name) {
    rl_fail(err, RL_LOST, "the hold of lock \"%s\" was lost%s (%s)", name, what,
            rl_lost_reason_name(reason));
    if (err) err->lost_reason = reason;
    return RL_LOST;
}

void rl_error_clear(rl_error *err) {
    if (err) {
        err->status = RL_OK;
        err->message[0] = '\0';
        err->lost_reason = RL_LOST_NONE;
        err->hold_kept = 0;
        err->grace_left_ms = 0;
    }
}

const char *rl_status_name(rl_status status) {
    switch (status) {
    case RL_OK:
        return "ok";
    case RL_NOT_ACQUIRED:
        return "not_acquired";
    case RL_NOT_OWNED:
        return "not_owned";
    case RL_LOST:
        return "lost";
    case RL_ABORTED:
        return "aborted";
    case RL_IN_DOUBT:
        return "in_doubt";
    case RL_ERR_ARGUMENT:
        return "argument";
    case RL_ERR_CONNECTION:
        return "connection";
    case RL_ERR_SERVER:
        return "server";
    case RL_ERR_CLOSED:
        return "closed";
    case RL_ERR_MEMORY:
        return "memory";
    case RL_ERR_UNSUPPORTED:
        return "unsupported";
    case RL_ERR_REPLICA:
        return "replica";
    }
    return "unknown";
}

const char *rl_lost_reason_name(rl_lost_reason reason) {
    switch (reason) {
    case RL_LOST_NONE:
        return "none";
    case RL_LOST_EXPIRED:
        return "expired";
    case RL_LOST_DELETED:
        return "deleted";
    case RL_LOST_OWNER_CHANGED:
        return "owner_changed";
    case RL_LOST_UNREACHABLE:
        return "unreachable";
    case RL_LOST_MAX_HOLD:
        return "max_hold";
    case RL_LOST_FAILOVER:
        return "failover";
    }
    return "unknown";
}

int rl_error_name_owner(rl_error *err, const char *owner) {
    static const char said[] = " is not held by this context";
    char *at = strstr(err->message, said);
    if (!at) return 0;
    char rest[sizeof err->message];
    snprintf(rest, sizeof rest, "%s", at + sizeof said - 1);
    snprintf(at, sizeof err->message - (size_t)(at - err->message), " is not held by this %s%s",
             owner, rest);
    return 1;
}

const char *rl_waited(int64_t wait_ms, const char *at_once, char *out) {
    if (wait_ms <= 0) return at_once;
    snprintf(out, RL_WAITED_SIZE, "within %lld.%03lld s", (long long)(wait_ms / 1000),
             (long long)(wait_ms % 1000));
    return out;
}
