/* The watchers of a Sentinel deployment: one thread per sentinel, each subscribed to
 * +switch-master on a connection of its own. Sentinels announce a failover seconds apart (the
 * others learn it from the leader's hello messages), and a client that asks one of them may learn
 * the new master from the first; a holder that listened on a single, later sentinel would be told
 * late. Listening on every sentinel, a client hears a failover from the first that announces it:
 * with the failover grace (failover_grace.h) that is what tells a holder in time. */
#ifndef RL_SENTINEL_WATCH_H
#define RL_SENTINEL_WATCH_H

#include "conn.h"

typedef struct rl_sentinel_watch rl_sentinel_watch;

typedef struct rl_sentinel_watch_hooks {
    /* A +switch-master message's payload (any watcher's thread, no lock held). */
    void (*heard_switch)(void *state, const char *payload);
    /* Ask the sentinels again (any watcher's thread, no lock held): a watcher subscribed while no
     * other listened (a switch may have happened meanwhile), or the sentinels were poked. */
    void (*ask_again)(void *state);
    void *state;
} rl_sentinel_watch_hooks;

/* Where sentinel i of cfg's endpoint is, with the sentinel credentials. */
rl_target rl_sentinel_target(const rl_config *cfg, int i);

/* For cfg's sentinels; starts nothing. NULL when out of memory. */
rl_sentinel_watch *rl_sentinel_watch_new(rl_config *cfg, rl_sentinel_watch_hooks hooks);
/* Starts the threads, once; 1 when they run (0: they could not start; failovers are then seen
 * only when a connection fails). */
int rl_sentinel_watch_start(rl_sentinel_watch *w);
int rl_sentinel_watch_started(rl_sentinel_watch *w);
/* Wakes one watcher to ask the sentinels again. */
void rl_sentinel_watch_poke(rl_sentinel_watch *w);
/* Stops and joins every thread, cutting their connections short. Call without a lock the hooks
 * take. */
void rl_sentinel_watch_stop(rl_sentinel_watch *w);
void rl_sentinel_watch_free(rl_sentinel_watch *w);
/* In a forked child: the threads are the parent's, their connections too. */
void rl_sentinel_watch_forget_after_fork(rl_sentinel_watch *w);

#endif
