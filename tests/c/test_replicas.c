/* Replica sync: WAIT after lock writes, with a real replica started by the test. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* Replicas the master lists as connected, per ROLE. */
static long long connected_replicas(void) {
    redisReply *r = raw(g_raw, "ROLE");
    long long n = -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3) n = (long long)r->element[2]->elements;
    freeReplyObject(r);
    return n;
}

static int wait_replicas(long long want, int64_t timeout_ms) {
    int64_t t0 = now_ms();
    while (connected_replicas() != want) {
        if (now_ms() - t0 > timeout_ms) return -1;
        sleep_ms(20);
    }
    return 0;
}

static rl_client *sync_client(void) {
    rl_options o;
    rl_options_init(&o);
    o.sync_replicas = 1;
    o.sync_timeout_ms = 1500;     /* wide: a loaded 2-core machine can lag the replica */
    o.watchdog_timeout_ms = 3000; /* longer than the sync timeout, as required */
    rl_client *c = NULL;
    rl_error e;
    return rl_client_new(g_server.url, &o, &c, &e) == RL_OK ? c : NULL;
}

TEST(replica_sync_acknowledged_stalled_and_gone) {
    char port[16];
    snprintf(port, sizeof port, "%d", g_server.port);
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    test_server replica;
    CHECK(server_start(&replica, args) == 0);
    CHECK(wait_replicas(1, 10000) == 0);
    rl_client *c = sync_client();
    CHECK(c);
    rl_lock *l = new_lock(c, "synced");

    /* A live replica acknowledges: acquire, renewals and release go through. */
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    redisContext *on_replica = server_connect(&replica);
    CHECK_INT(raw_int(on_replica, "EXISTS synced"), 1); /* WAIT returned: the replica has it */
    sleep_ms(1300); /* a renewal round (every 1 s) goes through WAIT too */
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(on_replica, "EXISTS synced"), 0);

    /* A stalled replica (still connected) acknowledges nothing: the acquire is undone. */
    CHECK(kill(replica.pid, SIGSTOP) == 0);
    int64_t t0 = now_ms();
    CHECK_STATUS(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err), RL_ERR_REPLICA);
    CHECK_MSG(now_ms() - t0 >= 1400, "gave up after %lld ms (sync timeout 1500)",
              (long long)(now_ms() - t0));
    CHECK_INT(raw_int(g_raw, "EXISTS synced"), 0); /* taken back on the master */
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    CHECK(kill(replica.pid, SIGCONT) == 0);

    /* No replica connected: nothing to wait for, the acquire stands. */
    server_stop(&replica);
    CHECK(wait_replicas(0, 10000) == 0);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_INT(raw_int(g_raw, "EXISTS synced"), 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    /* ... and, once the connection saw none listed, writes no longer wait for one: ROLE alone,
     * no WAIT of 1.5 s each. */
    rl_stats before, after;
    rl_client_stats(c, &before);
    t0 = now_ms();
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
    }
    CHECK_MSG(now_ms() - t0 < 1500, "3 cycles took %lld ms: a WAIT for an absent replica",
              (long long)(now_ms() - t0));
    rl_client_stats(c, &after);
    CHECK_INT(after.sync_skipped - before.sync_skipped, 6);
    CHECK_INT(after.sync_waits, before.sync_waits);
    CHECK(after.sync_acks >= 2); /* the acquire and release the live replica acknowledged */
    redisFree(on_replica);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(replica_sync_bad_options) {
    rl_options o;
    rl_options_init(&o);
    o.sync_replicas = -1;
    rl_client *c = NULL;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    rl_options_init(&o);
    o.sync_replicas = 1;
    o.sync_timeout_ms = 0;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    o.sync_timeout_ms = o.watchdog_timeout_ms; /* the hold could expire before its renewal */
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    CHECK(c == NULL);
}
