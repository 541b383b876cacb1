/* The small pool of command connections that host threads share. A thread takes a connection for
 * one exchange and gives it back; connections open lazily and reopen after errors. A connection
 * given back with deferred commands (an unlock latch's DEL) tells cfg->on_deferred, so that they
 * go out soon even when no other exchange carries them (rl_pool_send_deferred). */
#ifndef RL_POOL_H
#define RL_POOL_H

#include <pthread.h>

#include "conn.h"

typedef struct rl_pool {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    int size;
    int closed;
    rl_conn *conns;
    unsigned char *busy;
    int64_t *deferred_since; /* when each idle connection was given back with deferred commands */
    rl_config *cfg;
} rl_pool;

int rl_pool_init(rl_pool *pool, int size, rl_config *cfg); /* 0 on success */
void rl_pool_destroy(rl_pool *pool); /* every connection must have been given back */

/* Blocks until a connection is free; NULL once the pool is closed. */
rl_conn *rl_pool_take(rl_pool *pool);
void rl_pool_give(rl_pool *pool, rl_conn *conn);
/* An idle connection that is open, without waiting; NULL when none is (or the pool is closed). */
rl_conn *rl_pool_try_take_open(rl_pool *pool);

/* Sends the deferred commands of the idle connections given back at least `idle_ms` ago, and
 * reads their replies (within timeout_ms each). Returns when the next of those given back since
 * will be due (monotonic ms), 0 when none is left. */
int64_t rl_pool_send_deferred(rl_pool *pool, int64_t idle_ms, int64_t timeout_ms);

/* Closes idle connections now (their deferred commands sent first, not waited for) and the busy
 * ones as they come back; take() answers NULL. */
void rl_pool_close(rl_pool *pool);

/* Cuts short every exchange in progress (the client is closing). */
void rl_pool_interrupt(rl_pool *pool);

/* In a forked child: drop every connection without a word to the server. */
void rl_pool_forget_after_fork(rl_pool *pool);
/* In the child, at fork (mu held across it): the parent's waiters are gone from `freed`. */
void rl_pool_after_fork_child(rl_pool *pool);

#endif
