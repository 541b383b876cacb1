/* A throwaway Redis Sentinel for the core's tests: one sentinel (redis-server --sentinel on a free
 * loopback port) watching a master the test started, stopped by pid. */
#ifndef RL_TEST_SENTINEL_KIT_H
#define RL_TEST_SENTINEL_KIT_H

#include "harness.h"

/* Starts a sentinel that knows `master` as "mymaster"; s->url is the redis+sentinel:// URL of it.
 * 0 on success. Stop it with server_stop. */
int sentinel_start(test_server *s, const test_server *master);

#endif
