#include "pool.h"

#include <stdlib.h>

#include "clock.h"

int rl_pool_init(rl_pool *pool, int size, rl_config *cfg) {
    pool->size = size;
    pool->closed = 0;
    pool->conns = calloc((size_t)size, sizeof *pool->conns);
    pool->busy = calloc((size_t)size, 1);
    pool->deferred_since = calloc((size_t)size, sizeof *pool->deferred_since);
    pool->cfg = cfg;
    if (!pool->conns || !pool->busy || !pool->deferred_since) {
        free(pool->conns);
        free(pool->busy);
        free(pool->deferred_since);
        return -1;
    }
    for (int i = 0; i < size; i++)
        rl_conn_init(&pool->conns[i], cfg);
    pthread_mutex_init(&pool->mu, NULL);
    rl_cond_init(&pool->freed);
    return 0;
}

void rl_pool_destroy(rl_pool *pool) {
    for (int i = 0; i < pool->size; i++)
        rl_conn_close(&pool->conns[i]);
    free(pool->conns);
    free(pool->busy);
    free(pool->deferred_since);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->freed);
}

/* How long closing a pool waits for the replies to the deferred commands it sends: long enough
 * for any answering server, short enough that a stalled one does not make close slow. */
#define CLOSE_FLUSH_MS 100

/* An unlock latch's DEL still deferred goes out before the socket closes, and its reply is
 * awaited until `until`, so that the latch is gone when closing returns (a server that does not
 * answer by then still runs what it read). */
static void close_sending_deferred(rl_conn *conn, int64_t until) {
    if (conn->fd >= 0 && conn->deferred > 0) {
        int64_t left = until - rl_now_ms();
        rl_error err;
        if (left > 0)
            rl_conn_exchange(conn, left, 0, NULL, NULL, 0, &err);
        else
            rl_conn_flush(conn);
    }
    rl_conn_close(conn);
}

rl_conn *rl_pool_try_take_open(rl_pool *pool) {
    rl_conn *conn = NULL;
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < pool->size && !pool->closed; i++) {
        if (pool->busy[i] || pool->conns[i].fd < 0) continue;
        pool->busy[i] = 1;
        conn = &pool->conns[i];
        break;
    }
    pthread_mutex_unlock(&pool->mu);
    return conn;
}

rl_conn *rl_pool_take(rl_pool *pool) {
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        if (pool->closed) {
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        /* Prefer an open connection so idle ones stay unopened. */
        int pick = -1;
        for (int i = 0; i < pool->size; i++) {
            if (pool->busy[i]) continue;
            if (pool->conns[i].fd >= 0) {
                pick = i;
                break;
            }
            if (pick < 0) pick = i;
        }
        if (pick >= 0) {
            pool->busy[pick] = 1;
            pthread_mutex_unlock(&pool->mu);
            return &pool->conns[pick];
        }
        pthread_cond_wait(&pool->freed, &pool->mu);
    }
}

void rl_pool_give(rl_pool *pool, rl_conn *conn) {
    int deferred = conn->deferred > 0;
    pthread_mutex_lock(&pool->mu);
    if (pool->closed) {
        close_sending_deferred(conn, rl_now_ms() + CLOSE_FLUSH_MS);
        deferred = 0;
    }
    pool->busy[conn - pool->conns] = 0;
    pool->deferred_since[conn - pool->conns] = deferred ? rl_now_ms() : 0;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->mu);
    if (deferred && pool->cfg->on_deferred) pool->cfg->on_deferred(pool->cfg->on_deferred_arg);
}

int64_t rl_pool_send_deferred(rl_pool *pool, int64_t idle_ms, int64_t timeout_ms) {
    int64_t next_due = 0;
    for (int i = 0; i < pool->size; i++) {
        rl_conn *conn = &pool->conns[i];
        pthread_mutex_lock(&pool->mu);
        int64_t since = pool->deferred_since[i];
        int waiting = !pool->closed && !pool->busy[i] && since > 0 && conn->deferred > 0;
        int due = waiting && rl_now_ms() - since >= idle_ms;
        if (due) pool->busy[i] = 1; /* taken, as rl_pool_take would */
        pthread_mutex_unlock(&pool->mu);
        if (waiting && !due && (next_due == 0 || since + idle_ms < next_due))
            next_due = since + idle_ms;
        if (!due) continue;
        rl_error err;
        /* No commands of its own: the exchange sends the deferred ones and reads their replies. */
        rl_conn_exchange(conn, timeout_ms, 0, NULL, NULL, 1, &err);
        rl_pool_give(pool, conn);
    }
    return next_due;
}

void rl_pool_close(rl_pool *pool) {
    int64_t until = rl_now_ms() + CLOSE_FLUSH_MS;
    pthread_mutex_lock(&pool->mu);
    pool->closed = 1;
    for (int i = 0; i < pool->size; i++)
        if (!pool->busy[i]) close_sending_deferred(&pool->conns[i], until);
    pthread_cond_broadcast(&pool->freed);
    pthread_mutex_unlock(&pool->mu);
}

void rl_pool_interrupt(rl_pool *pool) {
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < pool->size; i++)
        if (pool->busy[i]) rl_conn_interrupt(&pool->conns[i]);
    pthread_mutex_unlock(&pool->mu);
}

void rl_pool_after_fork_child(rl_pool *pool) {
    rl_cond_init(&pool->freed);
}

void rl_pool_forget_after_fork(rl_pool *pool) {
    for (int i = 0; i < pool->size; i++) {
        if (pool->busy[i])
            rl_conn_abandon(&pool->conns[i]); /* its thread is gone mid-exchange */
        else
            rl_conn_close(&pool->conns[i]);
        pool->busy[i] = 0;
        pool->deferred_since[i] = 0;
    }
}
