#include "woken_acquire.h"

#include <string.h>

#include "clock.h"
#include "failover_grace.h"
#include "kind.h"

/* A failover's grace for the lock runs now (failover_grace.h). */
static int in_failover_grace(void *lock) {
    rl_lock *l = lock;
    return rl_failover_grace_left(l->client, l->name, l->name_len, rl_now_ms()) > 0;
}

int rl_woken_prime(rl_lock *l, const rl_attempt *a, rl_sub_send *s) {
    memset(s, 0, sizeof *s);
    if (l->kind == RL_LOCK_FAIR) return 0;
    /* In a failover's grace the waiter's own try answers (and waits the grace out). */
    if (a->fresh && in_failover_grace(l)) return 0;
    rl_acquire_args args = {a->owner, a->owner_len, a->lease, 1, a->window};
    redisReply *reply = NULL;
    rl_error ignored;
    rl_client_capture(s);
    rl_kind_of(l->kind)->acquire(l, &args, &reply, &ignored);
    rl_client_capture(NULL);
    freeReplyObject(reply); /* none: nothing was called */
    s->timeout_ms = l->client->cfg.options.command_timeout_ms;
    if (a->fresh) s->held_back = in_failover_grace, s->held_back_arg = l; /* a grace begun later */
    return s->cmd.argc > 0;
}

void rl_woken_free(rl_sub_send *s) {
    rl_client_capture_free(s);
}

static int is_readonly(const redisReply *r) {
    return r->len >= 8 && memcmp(r->str, "READONLY", 8) == 0;
}

int rl_woken_read(rl_lock *l, rl_attempt *a, rl_sub_send *s, int64_t *wait_hint_ms, rl_status *st,
                  rl_error *err) {
    if (s->outcome == RL_SUB_SEND_NONE) return 0;
    if (s->outcome == RL_SUB_SEND_FAILED) {
        if (err) *err = s->err;
        *st = s->st;
        return 1;
    }
    redisReply *reply = NULL;
    rl_status got = rl_conn_receive_replies(s->conn, 1, &reply, err);
    uint32_t server = s->conn->server;
    if (got == RL_OK && reply->type == REDIS_REPLY_ERROR) {
        /* Not run. A replica's refusal closes the connection and asks the resolver again, as the
         * waiter's own call does (scripts.c); its retry then goes to the master. */
        if (is_readonly(reply)) rl_conn_lost_master(s->conn, NULL);
        freeReplyObject(reply);
        rl_pool_give(s->pool, s->conn);
        return 0;
    }
    rl_pool_give(s->pool, s->conn);
    s->conn = NULL;
    rl_metrics_woken_sent(&l->client->metrics);
    if (got != RL_OK) { /* it may have run: as the waiter's own call that was not repeatable */
        *st = got;
        return 1;
    }
    a->sent_at = s->sent_at;
    a->server = server;
    *st = rl_lock_acquire_answer(l, a->owner, a->owner_len, a->lease, 1, a->window, reply,
                                 wait_hint_ms, &a->token, &a->reentered, err);
    return 1;
}
