/* The profile of measure 1: N acquire+release cycles of one C client on one free lock, and
 * nothing else, so that `perf stat` around a run of N and a run of 2N gives what one cycle costs
 * (system calls, task switches, CPU), the start-up cancelling out. Uses only the public API
 * that has not changed since the first benchmark page, so the same file is also built against
 * an earlier core (BENCH_BEFORE in mk/bench.mk) for the profile's "before" rows.
 * Usage: cycle_loop REDIS_URL N fixed|watchdog */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlease.h"

int main(int argc, char **argv) {
    if (argc != 4 || atoi(argv[2]) <= 0 ||
        (strcmp(argv[3], "fixed") != 0 && strcmp(argv[3], "watchdog") != 0)) {
        fprintf(stderr, "usage: cycle_loop REDIS_URL N fixed|watchdog\n");
        return 2;
    }
    int n = atoi(argv[2]);
    int64_t lease = strcmp(argv[3], "fixed") == 0 ? 10000 : RL_LEASE_WATCHDOG;
    rl_options o;
    rl_options_init(&o);
    rl_client *c;
    rl_lock *l;
    rl_error e;
    if (rl_client_new(argv[1], &o, &c, &e) != RL_OK) goto failed;
    if (rl_lock_new(c, "bench:profile", 13, &l, &e) != RL_OK) goto failed;
    for (int i = 0; i < n; i++) {
        if (rl_lock_acquire(l, 1, lease, 0, NULL, NULL, &e) != RL_OK) goto failed;
        if (rl_lock_release(l, 1, &e) != RL_OK) goto failed;
    }
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
failed:
    fprintf(stderr, "cycle_loop: %s\n", e.message);
    return 1;
}
