/* sync_aof: WAITAOF after lock writes, so that a lock is on the server's disk (and its replicas')
 * before the caller is told it holds it. Debian's Redis 7.0 has no WAITAOF: the tests that need
 * one run Valkey 8 (scripts/fetch-servers, REDLEASE_VALKEY_SERVER). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static rl_client *aof_client(const char *url, int replicas) {
    rl_options o;
    rl_options_init(&o);
    o.sync_aof = 1;
    o.sync_replicas = replicas;
    o.sync_timeout_ms = 1500;     /* wide: a loaded 2-core machine can lag the replica */
    o.watchdog_timeout_ms = 3000; /* longer than the sync timeout, as required */
    rl_client *c = NULL;
    rl_error e;
    return rl_client_new(url, &o, &c, &e) == RL_OK ? c : NULL;
}

/* Calls of `command` the server counted (INFO commandstats), 0 when none. */
static long long calls_of(redisContext *r, const char *command) {
    redisReply *info = raw(r, "INFO commandstats");
    char field[64];
    snprintf(field, sizeof field, "cmdstat_%s:calls=", command);
    const char *at = info->type == REDIS_REPLY_STRING ? strstr(info->str, field) : NULL;
    long long n = at ? atoll(at + strlen(field)) : 0;
    freeReplyObject(info);
    return n;
}

static int wait_replicas(redisContext *r, long long want, int64_t timeout_ms) {
    for (int64_t until = now_ms() + timeout_ms; now_ms() < until; sleep_ms(20)) {
        redisReply *role = raw(r, "ROLE");
        long long n = role->type == REDIS_REPLY_ARRAY && role->elements >= 3
                          ? (long long)role->element[2]->elements
                          : -1;
        freeReplyObject(role);
        if (n == want) return 0;
    }
    return -1;
}

TEST(sync_aof_refused_clearly_where_the_server_cannot_and_nothing_written) {
    /* The PATH's server with its default appendonly no: Redis 7.0 does not know WAITAOF, a newer
     * one refuses it without an append-only file. Either way the acquire fails before writing. */
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    rl_client *c = aof_client(s.url, 0);
    CHECK(c);
    rl_lock *l = new_lock(c, "aof:refused");
    rl_error e = {0};
    CHECK_INT(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e), RL_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(e.message, "sync_aof needs") && strstr(e.message, "WAITAOF"), "message: %s",
              e.message);
    redisContext *r = server_connect(&s);
    CHECK_INT(raw_int(r, "EXISTS aof:refused"), 0);
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    redisFree(r);
    rl_lock_free(l);
    rl_client_free(c);
    server_stop(&s);
}

TEST(sync_aof_off_sends_no_wait_of_any_kind) {
    /* The default client: no WAIT, no WAITAOF, no ROLE per write. */
    rl_client *c = NULL;
    CHECK_OK(rl_client_new(g_server.url, NULL, &c, err));
    rl_lock *l = new_lock(c, "aof:off");
    long long wait0 = calls_of(g_raw, "wait"), aof0 = calls_of(g_raw, "waitaof"),
              role0 = calls_of(g_raw, "role");
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
    }
    CHECK_INT(calls_of(g_raw, "wait"), wait0);
    CHECK_INT(calls_of(g_raw, "waitaof"), aof0);
    CHECK_INT(calls_of(g_raw, "role"), role0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(sync_aof_bad_options) {
    rl_options o;
    rl_options_init(&o);
    o.sync_aof = 2; /* a flag */
    rl_client *c = NULL;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    rl_options_init(&o);
    o.sync_aof = 1;
    o.sync_timeout_ms = o.watchdog_timeout_ms; /* the hold could expire before its renewal */
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    CHECK(c == NULL);
}

TEST(sync_aof_waits_for_the_disk_and_the_replica) {
    const char *valkey = valkey_server();
    if (!valkey) {
        test_skip("REDLEASE_VALKEY_SERVER is not set (make test-c sets it: scripts/fetch-servers)");
        return;
    }
    const char *aof[] = {"--appendonly", "yes", NULL};
    test_server master;
    CHECK(server_start_binary(&master, valkey, aof) == 0);
    redisContext *on_master = server_connect(&master);

    /* Without replicas: WAITAOF 1 0 after each write, and the lock is on the master's disk. */
    rl_client *c = aof_client(master.url, 0);
    CHECK(c);
    rl_lock *l = new_lock(c, "aof:lock");
    long long aof0 = calls_of(on_master, "waitaof");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    /* the connection's check, the acquire's and the release's */
    CHECK(calls_of(on_master, "waitaof") - aof0 >= 3);
    rl_stats st;
    rl_client_stats(c, &st);
    CHECK_INT(st.sync_waits, 2);
    rl_lock_free(l);
    rl_client_free(c);

    /* With a replica (its own append-only file): acknowledged by it, then stalled: undone. */
    char port[16];
    snprintf(port, sizeof port, "%d", master.port);
    const char *replica_args[] = {"--appendonly", "yes", "--replicaof", "127.0.0.1", port, NULL};
    test_server replica;
    CHECK(server_start_binary(&replica, valkey, replica_args) == 0);
    CHECK(wait_replicas(on_master, 1, 10000) == 0);
    c = aof_client(master.url, 1);
    CHECK(c);
    l = new_lock(c, "aof:lock");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    redisContext *on_replica = server_connect(&replica);
    CHECK_INT(raw_int(on_replica, "EXISTS aof:lock"), 1); /* WAITAOF returned: the replica has it */
    rl_client_stats(c, &st);
    CHECK_INT(st.sync_acks, 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK(kill(replica.pid, SIGSTOP) == 0);
    rl_error e = {0};
    int64_t t0 = now_ms();
    CHECK_INT(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e), RL_ERR_REPLICA);
    CHECK_MSG(strstr(e.message, "append-only file"), "message: %s", e.message);
    CHECK_MSG(now_ms() - t0 >= 1400, "gave up after %lld ms (sync timeout 1500)",
              (long long)(now_ms() - t0));
    CHECK_INT(raw_int(on_master, "EXISTS aof:lock"), 0); /* taken back on the master */
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    CHECK(kill(replica.pid, SIGCONT) == 0);
    redisFree(on_replica);
    rl_lock_free(l);
    rl_client_free(c);
    server_stop(&replica);

    /* The same server without an append-only file: refused on connecting, with the fix named. */
    freeReplyObject(raw(on_master, "CONFIG SET appendonly no"));
    c = aof_client(master.url, 0);
    CHECK(c);
    l = new_lock(c, "aof:lock");
    CHECK_INT(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e), RL_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(e.message, "appendonly yes"), "message: %s", e.message);
    CHECK_INT(raw_int(on_master, "EXISTS aof:lock"), 0);
    rl_lock_free(l);
    rl_client_free(c);
    redisFree(on_master);
    server_stop(&master);
}
