/* Redis Sentinel (redis+sentinel:// URLs): which server is the master now.
 *
 * The sentinels are asked (SENTINEL get-master-addr-by-name) when the client first connects, and
 * again whenever the master may have changed: a connection to it failed, it answered READONLY
 * or its ROLE is no longer master. Watcher threads also listen on every sentinel for
 * +switch-master (sentinel_watch.c). Each new address bumps an epoch: connections opened before it
 * are dropped and reopened to the new master (see conn.c), and the client is told so that calls in
 * progress on the old master are cut short (the watchdog, the subscriber and the pool reconnect).
 *
 * When no sentinel can be asked, the master known is used (ROLE on connect refuses it once it
 * is no longer master) and the watcher asks again in the background; a caller waits for the
 * sentinels only when no master is known yet, or for one sentinel's timeouts at most. Asks run one
 * at a time on the sentinel's own connection, so that rl_sentinel_stop cuts them short. */
#ifndef RL_SENTINEL_H
#define RL_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

typedef struct rl_sentinel rl_sentinel;

/* For cfg's sentinels and master name (cfg->endpoint). Asks nothing yet. */
rl_status rl_sentinel_new(rl_config *cfg, rl_sentinel **out, rl_error *err);
/* Stops the watcher (cutting its connection short) and frees everything. */
void rl_sentinel_free(rl_sentinel *s);
/* Stops and joins the watcher and cuts short an ask in progress (the client is closing: it
 * answers RL_ERR_CLOSED): from then on nothing is called back. */
void rl_sentinel_stop(rl_sentinel *s);
/* Called (on the watcher's thread, or an asking one) after the master's address changed. */
void rl_sentinel_on_moved(rl_sentinel *s, void (*moved)(void *userdata), void *userdata);

/* The master's address and its epoch: the one known, or asked from the sentinels when none is
 * known yet or it was doubted (the one known when they cannot be asked). */
rl_status rl_sentinel_master(rl_sentinel *s, char *host, size_t host_size, int *port,
                             uint64_t *epoch, rl_error *err);
/* A connection of `epoch` saw the master fail (error, READONLY, ROLE): ask again before the next
 * connection is opened. */
void rl_sentinel_doubt(rl_sentinel *s, uint64_t epoch);
uint64_t rl_sentinel_epoch(rl_sentinel *s);

/* The three above as the connection layer's resolver (its state: the rl_sentinel). */
extern const rl_resolver rl_sentinel_resolver;

/* fork(): its mutex is held across, as every client mutex (taken last). */
void rl_sentinel_lock(rl_sentinel *s);
void rl_sentinel_unlock(rl_sentinel *s);

/* In a forked child: the watchers are gone and their connections are the parent's. */
void rl_sentinel_forget_after_fork(rl_sentinel *s);

#endif
