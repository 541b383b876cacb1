/* The options catalogue (include/redlease.h): every rl_options field users set by name, with its
 * kind, default and bounds. rl_options_init and rl_client_new read it; so do the bindings and the
 * OpenResty backend's generator, so that an option is written down once, here. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conn_name.h"
#include "error.h"
#include "options.h"
#include "wake_grace.h"

#define AT(field) offsetof(rl_options, field)
#define NO_MAX RL_OPTION_NO_MAX

static const rl_option_info rows[] = {
    /* name, kind, offset, default, min, max, flags */
    {"connect_timeout", RL_OPTION_MS, AT(connect_timeout_ms), 5000, 1, NO_MAX, 0},
    {"command_timeout", RL_OPTION_MS, AT(command_timeout_ms), 5000, 1, NO_MAX, 0},
    {"watchdog_timeout", RL_OPTION_MS, AT(watchdog_timeout_ms), 30000, 3, RL_MAX_LEASE_MS, 0},
    {"latch_ttl", RL_OPTION_MS, AT(latch_ttl_ms), 20000, 1, NO_MAX, RL_OPTION_INTERNAL},
    /* opened on demand: one thread uses one connection */
    {"pool_size", RL_OPTION_COUNT, AT(pool_size), 16, 1, 256, RL_OPTION_INTERNAL},
    {"max_hold", RL_OPTION_MS, AT(max_hold_ms), 0, 0, NO_MAX, RL_OPTION_ZERO_NONE},
    {"sync_replicas", RL_OPTION_COUNT, AT(sync_replicas), 0, 0, NO_MAX, 0},
    {"sync_aof", RL_OPTION_FLAG, AT(sync_aof), 0, 0, 1, 0},
    {"sync_timeout", RL_OPTION_MS, AT(sync_timeout_ms), 1000, 1, NO_MAX, 0},
    {"fair_wait", RL_OPTION_MS, AT(fair_wait_ms), 300000, 1, RL_MAX_LEASE_MS, RL_OPTION_INTERNAL},
    {"handover_grace", RL_OPTION_MS, AT(handover_grace_ms), RL_HANDOVER_GRACE_MS, 0, 1000, 0},
    {"failover_grace", RL_OPTION_MS, AT(failover_grace_ms), 1000, 0, 60000, 0},
    /* 1% of the lease (+ RL_DRIFT_FIXED_MS), as Redlock's */
    {"drift_factor", RL_OPTION_PPM, AT(drift_factor_ppm), 10000, 0, 500000, 0},
    {"tls_ca_file", RL_OPTION_PATH, AT(tls_ca_file), 0, 0, 0, 0},
    {"tls_ca_dir", RL_OPTION_PATH, AT(tls_ca_dir), 0, 0, 0, 0},
    {"tls_cert_file", RL_OPTION_PATH, AT(tls_cert_file), 0, 0, 0, 0},
    {"tls_key_file", RL_OPTION_PATH, AT(tls_key_file), 0, 0, 0, 0},
    {"tls_server_name", RL_OPTION_TEXT, AT(tls_server_name), 0, 0, 0, 0},
    {"tls_insecure_skip_verify", RL_OPTION_FLAG, AT(tls_insecure_skip_verify), 0, 0, 1, 0},
    {"sentinel_user", RL_OPTION_TEXT, AT(sentinel_user), 0, 0, 0, 0},
    {"sentinel_password", RL_OPTION_TEXT, AT(sentinel_password), 0, 0, 0, 0},
    /* NULL: "<host>:<pid>" (conn_name.c) */
    {"client_name", RL_OPTION_TEXT, AT(client_name), 0, 0, 0, 0},
};

#define ROWS ((int)(sizeof rows / sizeof *rows))

const rl_option_info *rl_option_at(int index) {
    return index >= 0 && index < ROWS ? &rows[index] : NULL;
}

const rl_option_info *rl_option_find(const char *name, size_t len) {
    for (int i = 0; i < ROWS; i++)
        if (strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0) return &rows[i];
    return NULL;
}

const char *rl_option_kind_name(rl_option_kind kind) {
    static const char *const names[] = {
        [RL_OPTION_MS] = "ms",     [RL_OPTION_COUNT] = "count", [RL_OPTION_PPM] = "ppm",
        [RL_OPTION_TEXT] = "text", [RL_OPTION_PATH] = "path",   [RL_OPTION_FLAG] = "flag",
    };
    return (unsigned)kind < sizeof names / sizeof *names ? names[kind] : "?";
}

static int is_number(const rl_option_info *row) {
    return row->kind == RL_OPTION_MS || row->kind == RL_OPTION_COUNT || row->kind == RL_OPTION_PPM;
}

int64_t rl_option_get(const rl_options *o, const rl_option_info *row) {
    if (!is_number(row) && row->kind != RL_OPTION_FLAG) return 0;
    const char *at = (const char *)o + row->offset;
    int64_t v64;
    int v;
    if (row->kind == RL_OPTION_MS || row->kind == RL_OPTION_PPM) {
        memcpy(&v64, at, sizeof v64);
        return v64;
    }
    memcpy(&v, at, sizeof v);
    return v;
}

void rl_option_set(rl_options *o, const rl_option_info *row, int64_t value) {
    if (!is_number(row) && row->kind != RL_OPTION_FLAG) return;
    char *at = (char *)o + row->offset;
    if (row->kind == RL_OPTION_MS || row->kind == RL_OPTION_PPM) {
        memcpy(at, &value, sizeof value);
    } else {
        int v = value > INT32_MAX ? INT32_MAX : value < INT32_MIN ? INT32_MIN : (int)value;
        memcpy(at, &v, sizeof v);
    }
}

void rl_option_set_text(rl_options *o, const rl_option_info *row, const char *value) {
    if (row->kind == RL_OPTION_TEXT || row->kind == RL_OPTION_PATH)
        memcpy((char *)o + row->offset, &value, sizeof value);
}

void rl_options_init(rl_options *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < ROWS; i++)
        if (is_number(&rows[i])) rl_option_set(o, &rows[i], rows[i].def);
}

/* One bound as users read it: 2^40 for the longest lease, a fraction for parts per million. */
static int put_value(char *buf, size_t size, const rl_option_info *row, int64_t v) {
    if (row->kind == RL_OPTION_PPM) return snprintf(buf, size, "%g", (double)v / 1e6);
    if (row->kind == RL_OPTION_MS && v == RL_MAX_LEASE_MS) return snprintf(buf, size, "2^40");
    return snprintf(buf, size, "%" PRId64, v);
}

int rl_option_bounds(const rl_option_info *row, char *buf, size_t size) {
    const char *unit = row->kind == RL_OPTION_MS ? " ms" : "";
    char lo[32], hi[32];
    if (!is_number(row)) return snprintf(buf, size, "%s", "");
    put_value(lo, sizeof lo, row, row->min);
    if (row->max == RL_OPTION_NO_MAX) {
        if (row->min == 0)
            return snprintf(buf, size, "must be >= 0%s",
                            row->flags & RL_OPTION_ZERO_NONE ? " (0 = none)" : "");
        if (row->min == 1) return snprintf(buf, size, "must be > 0");
        return snprintf(buf, size, "must be at least %s%s", lo, unit);
    }
    put_value(hi, sizeof hi, row, row->max);
    /* "from 0 to 1000 ms", "from 3 ms to 2^40 ms": a zero needs no unit */
    return snprintf(buf, size, "must be from %s%s to %s%s", lo, row->min == 0 ? "" : unit, hi,
                    unit);
}

rl_status rl_options_check(const rl_options *o, rl_error *err) {
    for (int i = 0; i < ROWS; i++) {
        const rl_option_info *row = &rows[i];
        if (!is_number(row) && row->kind != RL_OPTION_FLAG) continue;
        int64_t v = rl_option_get(o, row);
        if (v >= row->min && v <= row->max) continue;
        char bounds[96] = "must be 0 or 1"; /* a flag */
        if (is_number(row)) rl_option_bounds(row, bounds, sizeof bounds);
        return rl_fail(err, RL_ERR_ARGUMENT, "%s %s", row->name, bounds);
    }
    if ((o->sync_replicas > 0 || o->sync_aof) && o->sync_timeout_ms >= o->watchdog_timeout_ms)
        /* An acquire waits for the replicas before its renewal starts: a longer wait could let
         * the hold expire before it is ever renewed. */
        return rl_fail(err, RL_ERR_ARGUMENT, "sync_timeout must be shorter than watchdog_timeout");
    if (o->client_name) return rl_client_name_check(o->client_name, err);
    return RL_OK;
}
