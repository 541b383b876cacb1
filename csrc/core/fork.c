#include "fork.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static rl_client *registry;
static atomic_uint_fast64_t generation;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

/* prepare: take every client's mutexes so that no other thread is midway through changing
 * the state a child inherits; the core never holds them during network I/O, so this is brief. */
static void prepare(void) {
    pthread_mutex_lock(&registry_mu);
    for (rl_client *c = registry; c; c = c->registry_next)
        rl_client_before_fork(c);
}

static void parent(void) {
    for (rl_client *c = registry; c; c = c->registry_next)
        rl_client_after_fork_parent(c);
    pthread_mutex_unlock(&registry_mu);
}

static void child(void) {
    atomic_fetch_add(&generation, 1);
    for (rl_client *c = registry; c; c = c->registry_next)
        rl_client_after_fork_child(c);
    pthread_mutex_unlock(&registry_mu);
}

static void install_handlers(void) {
    pthread_atfork(prepare, parent, child);
}

uint64_t rl_fork_generation(void) {
    return atomic_load(&generation);
}

void rl_fork_register(rl_client *c) {
    pthread_once(&handlers_once, install_handlers);
    pthread_mutex_lock(&registry_mu);
    c->registry_prev = NULL;
    c->registry_next = registry;
    if (registry) registry->registry_prev = c;
    registry = c;
    pthread_mutex_unlock(&registry_mu);
}

/* References are taken under registry_mu, and nothing of a client's life cycle runs under it:
 * entering (which may reset a forked child's client) and the unref that may destroy a client
 * (whose destroy takes registry_mu) come after it is let go. A client whose count reached zero is
 * skipped: its destroy is waiting for registry_mu to unregister it. */
size_t rl_clients_entered(rl_client ***out) {
    *out = NULL;
    pthread_mutex_lock(&registry_mu);
    size_t n = 0, cap = 0;
    for (rl_client *c = registry; c; c = c->registry_next)
        cap++;
    rl_client **clients = cap ? malloc(cap * sizeof *clients) : NULL;
    for (rl_client *c = registry; clients && c; c = c->registry_next)
        if (rl_client_try_ref(c)) clients[n++] = c;
    pthread_mutex_unlock(&registry_mu);
    size_t entered = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = rl_client_enter(clients[i], NULL) == RL_OK;
        rl_client_unref(clients[i]); /* the walk's own reference: the last one of a closed client */
        if (ok) clients[entered++] = clients[i];
    }
    if (!entered) {
        free(clients);
        clients = NULL;
    }
    *out = clients;
    return entered;
}

void rl_fork_unregister(rl_client *c) {
    pthread_mutex_lock(&registry_mu);
    if (c->registry_prev)
        c->registry_prev->registry_next = c->registry_next;
    else if (registry == c)
        registry = c->registry_next;
    if (c->registry_next) c->registry_next->registry_prev = c->registry_prev;
    c->registry_prev = c->registry_next = NULL;
    pthread_mutex_unlock(&registry_mu);
}
