/* The watchdog: one background thread per client that keeps watchdog-mode holds alive.
 *
 * Every watchdog_timeout/3, at a fixed rate, one round renews all of the client's watched holds
 * with as few round trips as possible: many (key, owner) pairs per script call and the calls of
 * the round pipelined, in exchanges of up to 50,000 holds. The thread starts with the first
 * watched hold and stops after a renewal period with none. It never holds the client mutex during
 * network I/O; a release waits for the round that carries its hold, so no renewal can follow a
 * release. A renewal that fails on the network is retried with back-off until the lease Redis last
 * confirmed runs out; only then, or as soon as Redis answers that the hold is gone, is the hold
 * declared lost. */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conn.h"
#include "holds.h"
#include "slots.h"

struct rl_client;

/* A round renews its holds in exchanges of at most this many (50 script calls, one round trip
 * each): each exchange has the command timeout to itself, which a million holds in one overran.
 * Not fewer: on a loaded machine each round trip costs the watchdog a wake-up, tens of ms (10,000
 * per exchange made a round over 100,000 holds 60% longer there). rl_watchdog_slice_holds is
 * it, changed only by tests (0: one exchange). */
#define RL_WATCHDOG_SLICE_HOLDS 50000
extern size_t rl_watchdog_slice_holds;

typedef struct rl_watchdog {
    pthread_t thread;
    int thread_started;      /* a thread exists and must be joined */
    int running;             /* the thread is in its loop */
    int64_t next_round;      /* when the next round is due (monotonic ms) */
    int64_t lingering_until; /* > 0 while the thread, with nothing to renew, sleeps till then */
    int stop;
    pthread_cond_t wake;       /* new hold, stop */
    pthread_cond_t round_done; /* holds left a round */
    rl_conn conn;              /* the watchdog's own connection */
    atomic_int in_io;
    atomic_int master_moved; /* rl_watchdog_master_moved: doubt every hold, renew now */
    atomic_int slots_moved;  /* rl_watchdog_slots_moved: doubt the holds of these, renew now */
    _Atomic uint64_t moved_slots[RL_SLOTS / 64];
    uint64_t rounds, round_trips, calls, renewed, failed_rounds;
    uint64_t server_changes;         /* holds found answered by another server than before */
    uint64_t round_us, round_cpu_us; /* wall and CPU time of the rounds that reached Redis */
    uint64_t last_round_us, last_round_cpu_us, last_round_net_us;
    size_t last_round_holds;
    size_t last_round_nodes; /* the servers it went to (a cluster's nodes) */
} rl_watchdog;

void rl_watchdog_init(rl_watchdog *wd, rl_config *cfg);
void rl_watchdog_destroy(rl_watchdog *wd);

/* The renewal script's mark for a permit (a hold of kind RL_HOLD_PERMIT), where a read hold's
 * key prefix goes: no read hold's prefix is this short. */
#define RL_RENEW_PERMIT "#permit"

enum { RL_WATCH_OK = 0, RL_WATCH_NO_THREAD = -1, RL_WATCH_STOPPED = -2 };

/* With the client mutex held: put `hold` on the renewal list, starting the thread if needed.
 * Returns RL_WATCH_OK, or (the hold is then not watched) RL_WATCH_NO_THREAD when the thread
 * cannot start, RL_WATCH_STOPPED when the client is closing. */
int rl_watchdog_watch(struct rl_client *c, rl_hold *hold);

/* With the client mutex held: wait until `hold` is in no renewal round on the wire. */
void rl_watchdog_wait_out_round(struct rl_client *c, rl_hold *hold);

/* Stops and joins the thread, closes its connection. */
void rl_watchdog_stop(struct rl_client *c);

/* The deployment learned that its master changed (Sentinel's +switch-master): every hold is put
 * in doubt and a round runs at once to verify them on the new master. Any thread, any lock held
 * (it only sets a flag and signals; a signal lost to a race costs at most one period). */
void rl_watchdog_master_moved(struct rl_client *c);

/* The same for a Cluster's slots that changed owner (a reshard, a failover): the holds whose key
 * is in one of `slots` (a bitmap of RL_SLOTS bits) go in doubt and a round verifies them at once.
 * Any thread, any lock held. */
void rl_watchdog_slots_moved(struct rl_client *c, const uint64_t *slots);

/* With the client mutex held, from a thread that is not the watchdog's (a host taking its
 * queued events while a round is on the wire): the watched holds whose confirmed lease has run
 * out are lost, and those whose renewal is half a period late go in doubt, as the watchdog would
 * say after its round, so that a round or a call stuck on the network does not hold back what
 * the clock already tells. */
void rl_watchdog_settle(struct rl_client *c);

/* In a forked child: the thread is gone and the connection is the parent's. */
void rl_watchdog_forget_after_fork(rl_watchdog *wd);

#endif
