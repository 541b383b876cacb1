#include "scripts.h"

#include <string.h>

#include "error.h"

void rl_scripts_init(rl_scripts *s) {
    pthread_mutex_init(&s->mu, NULL);
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        s->sha[i][0] = '\0';
        atomic_init(&s->known[i], 0);
    }
}

void rl_scripts_destroy(rl_scripts *s) { pthread_mutex_destroy(&s->mu); }

/* SCRIPT LOAD on conn's server; the first load also records the sha. */
static rl_status load(rl_scripts *s, rl_conn *conn, const rl_config *cfg, int64_t timeout_ms,
                      rl_script_id id, rl_error *err) {
    const char *text = rl_script_text(id);
    const char *argv[3] = {"SCRIPT", "LOAD", text};
    size_t lens[3] = {6, 4, strlen(text)};
    rl_cmd cmd = {3, argv, lens};
    redisReply *reply = NULL;
    rl_status st = rl_conn_exchange(conn, cfg, timeout_ms, 1, &cmd, &reply, 1, err);
    if (st != RL_OK) return st;
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        st = rl_fail_reply(err, "SCRIPT LOAD", reply);
    } else {
        pthread_mutex_lock(&s->mu);
        if (!atomic_load(&s->known[id])) {
            memcpy(s->sha[id], reply->str, 40);
            s->sha[id][40] = '\0';
            atomic_store(&s->known[id], 1);
        }
        pthread_mutex_unlock(&s->mu);
    }
    freeReplyObject(reply);
    return st;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0;
}

rl_status rl_scripts_run(rl_scripts *s, rl_conn *conn, const rl_config *cfg, int64_t timeout_ms,
                         rl_script_id id, size_t n, rl_cmd *cmds, redisReply **replies,
                         int idempotent, rl_error *err) {
    if (!atomic_load(&s->known[id])) {
        rl_status st = load(s, conn, cfg, timeout_ms, id, err);
        if (st != RL_OK) return st;
    }
    for (size_t i = 0; i < n; i++) {
        cmds[i].argv[0] = "EVALSHA";
        cmds[i].lens[0] = 7;
        cmds[i].argv[1] = s->sha[id];
        cmds[i].lens[1] = 40;
    }
    for (int attempt = 0;; attempt++) {
        rl_status st = rl_conn_exchange(conn, cfg, timeout_ms, n, cmds, replies, idempotent, err);
        if (st != RL_OK) return st;
        int missing = 0;
        for (size_t i = 0; i < n; i++) missing |= is_noscript(replies[i]);
        if (missing && attempt == 0) {
            /* The server lost its scripts (restart, SCRIPT FLUSH): load and run the calls again.
             * A call answered NOSCRIPT did not run, so this is safe for any script. */
            for (size_t i = 0; i < n; i++) {
                freeReplyObject(replies[i]);
                replies[i] = NULL;
            }
            st = load(s, conn, cfg, timeout_ms, id, err);
            if (st != RL_OK) return st;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (replies[i]->type != REDIS_REPLY_ERROR) continue;
            rl_status failed = rl_fail_reply(err, "the lock script", replies[i]);
            for (size_t j = 0; j < n; j++) {
                freeReplyObject(replies[j]);
                replies[j] = NULL;
            }
            return failed;
        }
        return RL_OK;
    }
}
