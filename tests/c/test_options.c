/* The options catalogue: rl_options_init's defaults and rl_client_new's bounds come from it, and
 * the messages users see name the option and its bounds. */
#include <string.h>

#include "harness.h"

static const char *refusal(rl_options *o) {
    static rl_error e;
    rl_client *c = NULL;
    if (rl_client_new(g_server.url, o, &c, &e) == RL_OK) {
        rl_client_free(c);
        return "(accepted)";
    }
    return e.message;
}

TEST(options_defaults) {
    rl_options o;
    rl_options_init(&o);
    CHECK_INT(o.connect_timeout_ms, 5000);
    CHECK_INT(o.command_timeout_ms, 5000);
    CHECK_INT(o.watchdog_timeout_ms, 30000);
    CHECK_INT(o.latch_ttl_ms, 20000);
    CHECK_INT(o.pool_size, 16);
    CHECK_INT(o.max_hold_ms, 0);
    CHECK_INT(o.sync_replicas, 0);
    CHECK_INT(o.sync_timeout_ms, 1000);
    CHECK_INT(o.fair_wait_ms, 300000);
    CHECK_INT(o.handover_grace_ms, 2);
    CHECK_INT(o.drift_factor_ppm, 10000);
    CHECK(!o.tls_ca_file && !o.sentinel_user && !o.tls_insecure_skip_verify && !o.on_event);
    CHECK(!o.client_name); /* "<host>:<pid>" */
}

/* Each message as rl_client_new gave it before the catalogue. */
TEST(options_bounds_messages) {
    static const struct {
        const char *name;
        int64_t bad;
        const char *message;
    } cases[] = {
        {"connect_timeout", 0, "connect_timeout must be > 0"},
        {"command_timeout", -5, "command_timeout must be > 0"},
        {"watchdog_timeout", 2, "watchdog_timeout must be from 3 ms to 2^40 ms"},
        {"watchdog_timeout", RL_MAX_LEASE_MS + 1, "watchdog_timeout must be from 3 ms to 2^40 ms"},
        {"latch_ttl", 0, "latch_ttl must be > 0"},
        {"pool_size", 257, "pool_size must be from 1 to 256"},
        {"max_hold", -1, "max_hold must be >= 0 (0 = none)"},
        {"sync_replicas", -1, "sync_replicas must be >= 0"},
        {"sync_timeout", 0, "sync_timeout must be > 0"},
        {"fair_wait", 0, "fair_wait must be from 1 ms to 2^40 ms"},
        {"handover_grace", 1001, "handover_grace must be from 0 to 1000 ms"},
        {"drift_factor", 500001, "drift_factor must be from 0 to 0.5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const rl_option_info *row = rl_option_find(cases[i].name, strlen(cases[i].name));
        CHECK_MSG(row != NULL, "%s", cases[i].name);
        rl_options o;
        rl_options_init(&o);
        rl_option_set(&o, row, cases[i].bad);
        const char *got = refusal(&o);
        CHECK_MSG(strcmp(got, cases[i].message) == 0, "%s: %s", cases[i].name, got);
    }
    rl_options o;
    rl_options_init(&o);
    o.sync_replicas = 1;
    o.sync_timeout_ms = o.watchdog_timeout_ms;
    CHECK(strcmp(refusal(&o), "sync_timeout must be shorter than watchdog_timeout") == 0);
}

/* Every row points at its own field: setting it by the catalogue sets that field and no other. */
TEST(options_rows_point_at_their_fields) {
    const rl_option_info *row;
    for (int i = 0; (row = rl_option_at(i)); i++) {
        CHECK(rl_option_find(row->name, strlen(row->name)) == row);
        rl_options a, b;
        rl_options_init(&a);
        rl_options_init(&b);
        if (row->kind == RL_OPTION_TEXT || row->kind == RL_OPTION_PATH) {
            rl_option_set_text(&b, row, "x");
            CHECK(strcmp(*(const char **)((char *)&b + row->offset), "x") == 0);
        } else {
            CHECK_INT(rl_option_get(&a, row), row->kind == RL_OPTION_FLAG ? 0 : row->def);
            rl_option_set(&b, row, row->kind == RL_OPTION_FLAG ? 1 : row->def + 1);
            CHECK_INT(rl_option_get(&b, row), row->kind == RL_OPTION_FLAG ? 1 : row->def + 1);
        }
        CHECK_MSG(memcmp(&a, &b, sizeof a) != 0, "%s changed nothing", row->name);
        /* only the row's own bytes differ */
        size_t width = row->kind == RL_OPTION_COUNT || row->kind == RL_OPTION_FLAG ? sizeof(int)
                       : row->kind == RL_OPTION_TEXT || row->kind == RL_OPTION_PATH
                           ? sizeof(const char *)
                           : sizeof(int64_t);
        for (size_t at = 0; at < sizeof a; at++)
            if (at < row->offset || at >= row->offset + width)
                CHECK_MSG(((char *)&a)[at] == ((char *)&b)[at], "%s spilled at %zu", row->name, at);
    }
    CHECK(rl_option_at(-1) == NULL && rl_option_find("nope", 4) == NULL);
}
