#include "scripts.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static const struct {
    const char *name, *text;
} catalogue[RL_SCRIPT_COUNT] = {
    [RL_SCRIPT_ACQUIRE] = {"acquire", rl_lua_acquire},
    [RL_SCRIPT_RELEASE] = {"release", rl_lua_release},
    [RL_SCRIPT_FORCE_UNLOCK] = {"force_unlock", rl_lua_force_unlock},
    [RL_SCRIPT_RENEW] = {"renew", rl_lua_renew},
    [RL_SCRIPT_FENCED_ACQUIRE] = {"fenced_acquire", rl_lua_fenced_acquire},
    [RL_SCRIPT_FAIR_ACQUIRE] = {"fair_acquire", rl_lua_fair_acquire},
    [RL_SCRIPT_FAIR_CANCEL] = {"fair_cancel", rl_lua_fair_cancel},
    [RL_SCRIPT_FAIR_RELEASE] = {"fair_release", rl_lua_fair_release},
    [RL_SCRIPT_FAIR_FORCE_UNLOCK] = {"fair_force_unlock", rl_lua_fair_force_unlock},
    [RL_SCRIPT_READ_ACQUIRE] = {"read_acquire", rl_lua_read_acquire},
    [RL_SCRIPT_WRITE_ACQUIRE] = {"write_acquire", rl_lua_write_acquire},
    [RL_SCRIPT_READ_RELEASE] = {"read_release", rl_lua_read_release},
    [RL_SCRIPT_WRITE_RELEASE] = {"write_release", rl_lua_write_release},
    [RL_SCRIPT_RW_FORCE_UNLOCK] = {"rw_force_unlock", rl_lua_rw_force_unlock},
    [RL_SCRIPT_SEM_TRY_SET] = {"semaphore_try_set", rl_lua_sem_try_set},
    [RL_SCRIPT_SEM_ADD] = {"semaphore_add", rl_lua_sem_add},
    [RL_SCRIPT_SEM_ACQUIRE] = {"semaphore_acquire", rl_lua_sem_acquire},
    [RL_SCRIPT_SEM_RELEASE] = {"semaphore_release", rl_lua_sem_release},
    [RL_SCRIPT_SEM_DRAIN] = {"semaphore_drain", rl_lua_sem_drain},
    [RL_SCRIPT_PERMIT_ACQUIRE] = {"permit_acquire", rl_lua_permit_acquire},
    [RL_SCRIPT_PERMIT_RELEASE] = {"permit_release", rl_lua_permit_release},
    [RL_SCRIPT_PERMIT_UPDATE_LEASE] = {"permit_update_lease", rl_lua_permit_update_lease},
    [RL_SCRIPT_PERMIT_AVAILABLE] = {"permit_available", rl_lua_permit_available},
    [RL_SCRIPT_PERMIT_ADD] = {"permit_add", rl_lua_permit_add},
    [RL_SCRIPT_LATCH_TRY_SET] = {"latch_try_set", rl_lua_latch_try_set},
    [RL_SCRIPT_LATCH_COUNT_DOWN] = {"latch_count_down", rl_lua_latch_count_down},
    [RL_SCRIPT_LATCH_DELETE] = {"latch_delete", rl_lua_latch_delete},
    [RL_SCRIPT_FENCED_FORCE_UNLOCK] = {"fenced_force_unlock", rl_lua_fenced_force_unlock},
    [RL_SCRIPT_FENCED_SET] = {"fenced_set", rl_lua_fenced_set},
    [RL_SCRIPT_FENCE_DROP] = {"fence_drop", rl_lua_fence_drop},
};

const char *rl_script_text(rl_script_id id) {
    return catalogue[id].text;
}

const char *rl_script_name(int index) {
    return index >= 0 && index < RL_SCRIPT_COUNT ? catalogue[index].name : NULL;
}

const char *rl_script_source(int index) {
    return index >= 0 && index < RL_SCRIPT_COUNT ? catalogue[index].text : NULL;
}

void rl_scripts_init(rl_scripts *s) {
    pthread_mutex_init(&s->mu, NULL);
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        s->sha[i][0] = '\0';
        atomic_init(&s->known[i], 0);
    }
}

void rl_scripts_destroy(rl_scripts *s) {
    pthread_mutex_destroy(&s->mu);
}

/* SCRIPT LOAD of every script on conn's server, in one round trip: a later call (a fair waiter
 * leaving its queue during an outage, say) then never needs a load of its own first. The first
 * load records the shas, which never change. */
static rl_status load(rl_scripts *s, rl_conn *conn, int64_t timeout_ms, rl_error *err) {
    const char *argv[RL_SCRIPT_COUNT][3];
    size_t lens[RL_SCRIPT_COUNT][3];
    rl_cmd cmds[RL_SCRIPT_COUNT];
    redisReply *replies[RL_SCRIPT_COUNT] = {NULL};
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        const char *text = rl_script_text((rl_script_id)i);
        argv[i][0] = "SCRIPT", argv[i][1] = "LOAD", argv[i][2] = text;
        lens[i][0] = 6, lens[i][1] = 4, lens[i][2] = strlen(text);
        cmds[i] = (rl_cmd){3, argv[i], lens[i]};
    }
    rl_status st = rl_conn_exchange(conn, timeout_ms, RL_SCRIPT_COUNT, cmds, replies, 1, err);
    if (st != RL_OK) return st;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        const redisReply *r = replies[i];
        if (r->type != REDIS_REPLY_STRING || r->len != 40) {
            if (st == RL_OK) st = rl_fail_reply(err, "SCRIPT LOAD", r);
        } else if (!atomic_load(&s->known[i])) {
            memcpy(s->sha[i], r->str, 40);
            s->sha[i][40] = '\0';
            atomic_store(&s->known[i], 1);
        }
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < RL_SCRIPT_COUNT; i++)
        freeReplyObject(replies[i]);
    return st;
}

/* A replica refusing a write: the server stopped being the master (a failover). */
static int is_readonly(const redisReply *r) {
    return r->len >= 8 && memcmp(r->str, "READONLY", 8) == 0;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0;
}

rl_status rl_scripts_run(rl_scripts *s, rl_conn *conn, int64_t timeout_ms, rl_script_id id,
                         size_t n, rl_cmd *cmds, redisReply **replies, int idempotent,
                         rl_error *err) {
    return rl_scripts_run_led(s, conn, timeout_ms, id, n, cmds, replies, idempotent, NULL, NULL,
                              err);
}

static void free_replies(redisReply **replies, size_t n) {
    for (size_t i = 0; i < n; i++) {
        freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
}

rl_status rl_scripts_run_led(rl_scripts *s, rl_conn *conn, int64_t timeout_ms, rl_script_id id,
                             size_t n, rl_cmd *cmds, redisReply **replies, int idempotent,
                             const rl_cmd *lead, redisReply **lead_reply, rl_error *err) {
    conn->redirect.kind = RL_REDIRECT_NONE;
    if (!atomic_load(&s->known[id])) {
        rl_status st = load(s, conn, timeout_ms, err);
        if (st != RL_OK) return st;
    }
    for (size_t i = 0; i < n; i++) {
        cmds[i].argv[0] = "EVALSHA";
        cmds[i].lens[0] = 7;
        cmds[i].argv[1] = s->sha[id];
        cmds[i].lens[1] = 40;
    }
    /* The lead goes first in the same pipeline: all[0], then the calls. */
    size_t off = lead ? 1 : 0;
    rl_cmd *all = cmds;
    redisReply **answers = replies;
    if (lead) {
        all = malloc((n + 1) * sizeof *all);
        answers = calloc(n + 1, sizeof *answers);
        if (!all || !answers) {
            free(all);
            free(answers);
            return rl_fail(err, RL_ERR_MEMORY, "out of memory");
        }
        all[0] = *lead;
        memcpy(all + 1, cmds, n * sizeof *cmds);
    }
    rl_status st;
    for (int attempt = 0;; attempt++) {
        st = rl_conn_exchange(conn, timeout_ms, n + off, all, answers, idempotent, err);
        if (st != RL_OK) break;
        int missing = 0;
        for (size_t i = off; i < n + off; i++)
            missing |= is_noscript(answers[i]);
        if (missing && attempt == 0) {
            /* The server lost its scripts (restart, SCRIPT FLUSH): load and run the calls again.
             * A call answered NOSCRIPT did not run, so this is safe for any script. */
            free_replies(answers, n + off);
            st = load(s, conn, timeout_ms, err);
            if (st != RL_OK) break;
            continue;
        }
        for (size_t i = off; i < n + off; i++) {
            if (answers[i]->type != REDIS_REPLY_ERROR) continue;
            rl_status failed = rl_fail_reply(err, "the lock script", answers[i]);
            if (is_readonly(answers[i])) failed = rl_conn_lost_master(conn, err);
            if (rl_reply_is_wrong_type(answers[i]))
                failed = rl_fail_wrong_type(err, conn, timeout_ms, id, &all[i]);
            rl_redirect_parse(answers[i], &conn->redirect); /* a cluster's caller follows it */
            free_replies(answers, n + off);
            st = failed;
            break;
        }
        break;
    }
    if (lead) {
        *lead_reply = answers[0];
        if (st == RL_OK) memcpy(replies, answers + 1, n * sizeof *replies);
        free(all);
        free(answers);
    }
    return st;
}
