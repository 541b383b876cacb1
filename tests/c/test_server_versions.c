/* Servers too old for a feature the core needs are refused by name. A Redis Cluster needs sharded
 * pub/sub (SSUBSCRIBE, SPUBLISH: Redis 7.0); $REDLEASE_REDIS6_SERVER names a Redis 6 binary
 * (scripts/fetch-servers redis62; `make test-servers` sets it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SLOTS 16384 /* a Redis Cluster's hash slots */

/* A one-node cluster of the server binary `executable`, serving every slot; 0 once it is up. */
static int one_node_cluster(test_server *s, const char *executable) {
    const char *args[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", NULL};
    if (server_start_binary(s, executable, args) != 0) return -1;
    static const char *argv[2 + SLOTS];
    static size_t lens[2 + SLOTS];
    static char slots[SLOTS][8];
    argv[0] = "CLUSTER", argv[1] = "ADDSLOTS";
    lens[0] = 7, lens[1] = 8;
    for (int i = 0; i < SLOTS; i++) {
        lens[2 + i] = (size_t)snprintf(slots[i], sizeof slots[i], "%d", i);
        argv[2 + i] = slots[i];
    }
    redisContext *c = server_connect(s);
    redisReply *r = redisCommandArgv(c, 2 + SLOTS, argv, lens);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    for (int wait = 0; ok && wait < 200; wait++) {
        r = redisCommand(c, "CLUSTER INFO");
        int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (r) freeReplyObject(r);
        if (up) break;
        sleep_ms(25);
    }
    redisFree(c);
    return ok ? 0 : -1;
}

TEST(cluster_of_redis6_is_refused_naming_its_version_and_sharded_pubsub) {
    const char *old = getenv("REDLEASE_REDIS6_SERVER");
    if (!old || !*old) {
        test_skip("REDLEASE_REDIS6_SERVER names no Redis 6 binary (make test-servers sets it)");
        return;
    }
    test_server s;
    CHECK_MSG(one_node_cluster(&s, old) == 0, "no one-node cluster of %s", old);
    char url[128];
    snprintf(url, sizeof url, "redis+cluster://127.0.0.1:%d", s.port);
    rl_client *c = new_client(url, 0);
    rl_lock *l = new_lock(c, "old:lock");
    for (int attempt = 0; attempt < 2; attempt++) { /* the same answer when asked again */
        rl_error e = {0};
        rl_status st = rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, &e);
        CHECK_MSG(st == RL_ERR_UNSUPPORTED, "acquire %d: %s: %s", attempt, rl_status_name(st),
                  e.message);
        CHECK_MSG(strstr(e.message, "Redis 6.2") && strstr(e.message, "sharded pub/sub") &&
                      strstr(e.message, "7.0"),
                  "the message names neither the version nor the feature: %s", e.message);
        sleep_ms(150); /* past the map's refresh interval: asked again */
    }
    redisContext *raw_c = server_connect(&s);
    CHECK_INT(raw_int(raw_c, "DBSIZE"), 0); /* nothing was written */
    redisFree(raw_c);
    rl_lock_free(l);
    rl_client_free(c);
    server_stop(&s);
}
