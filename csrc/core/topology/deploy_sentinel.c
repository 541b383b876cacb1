/* The Sentinel deployment (redis+sentinel://): one server at a time, the master the sentinels
 * name (sentinel.c). Calls, waiters and renewals go where the standalone's go; what differs is
 * where the connections open, which sentinel.c answers as the connection layer's resolver, and
 * the watcher thread it owns. */
#include "client.h"
#include "deploy.h"
#include "failover_grace.h"
#include "sentinel.h"

static rl_sentinel *sentinel_of(rl_client *c) {
    return c->deploy_state;
}

/* A new master: no new hold for the failover grace, then cut short every call in progress on
 * the old one (the pool's idle connections notice at their next use). On the thread that learned
 * it, no lock held. */
static void master_moved(void *userdata) {
    rl_client *c = userdata;
    rl_failover_grace_begin(c);
    rl_pool_interrupt(&c->pool);
    rl_conn_interrupt(&c->watchdog.conn);
    rl_conn_interrupt(&c->sub.conn);
    rl_watchdog_master_moved(c);
}

static rl_status create(rl_client *c, rl_error *err) {
    rl_sentinel *s;
    rl_status st = rl_sentinel_new(&c->cfg, &s, err);
    if (st != RL_OK) return st;
    c->deploy_state = s;
    rl_sentinel_on_moved(s, master_moved, c);
    c->cfg.resolver = &rl_sentinel_resolver;
    c->cfg.resolver_state = s;
    return RL_OK;
}

static void stop(rl_client *c) {
    rl_sentinel_stop(sentinel_of(c)); /* no more moves reported */
}

static void destroy(rl_client *c) {
    rl_sentinel_free(sentinel_of(c));
}

static void fork_lock(rl_client *c) {
    rl_sentinel_lock(sentinel_of(c));
}

static void fork_unlock(rl_client *c) {
    rl_sentinel_unlock(sentinel_of(c));
}

static void forget_after_fork(rl_client *c) {
    rl_sentinel_forget_after_fork(sentinel_of(c));
}

const rl_deploy rl_deploy_sentinel = {
    .name = "sentinel",
    .numsub = "NUMSUB",
    .create = create,
    .stop = stop,
    .destroy = destroy,
    .fork_lock = fork_lock,
    .fork_unlock = fork_unlock,
    .after_fork_child = rl_standalone_after_fork_child,
    .forget_after_fork = forget_after_fork,
    .call = rl_standalone_call,
    .commands = rl_standalone_commands,
    .scan = rl_standalone_scan,
    .check_name = rl_standalone_check_name,
    .subscriber = rl_standalone_subscriber,
    .channel_moved = rl_standalone_channel_moved,
    .subscriptions = rl_standalone_subscriptions,
    .send_deferred = rl_standalone_send_deferred,
    .renew = rl_standalone_renew,
    .stats = rl_standalone_stats,
};
