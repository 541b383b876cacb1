#include "pool.h"

#include <stdlib.h>

#include "clock.h"

int rl_pool_init(rl_pool *pool, int size, rl_config *cfg) {
    pool->size = size;
    pool->closed = 0;
    pool->conns = calloc((size_t)size, sizeof *pool->conns);
    pool->busy = calloc((size_t)size, 1);
    if (!pool->conns || !pool->busy) {
        free(pool->conns);
        free(pool->busy);
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
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->freed);
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
    pthread_mutex_lock(&pool->mu);
    if (pool->closed) rl_conn_close(conn);
    pool->busy[conn - pool->conns] = 0;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->mu);
}

void rl_pool_close(rl_pool *pool) {
    pthread_mutex_lock(&pool->mu);
    pool->closed = 1;
    for (int i = 0; i < pool->size; i++)
        if (!pool->busy[i]) rl_conn_close(&pool->conns[i]);
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
    }
}
