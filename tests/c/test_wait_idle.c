/* A blocked waiter without a hook sleeps until something changes or its deadline: many waiting
 * threads cost no CPU. With a hook it wakes every slice to run it (Ctrl-C in the hosts). */
#include <sys/resource.h>

#include "harness.h"

#define WAITERS 100

static long voluntary_switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw;
}

static int count_calls(void *userdata) {
    (*(_Atomic int *)userdata)++;
    return 0;
}

/* Switches of the whole process while WAITERS threads wait 1.5 s on a held lock (its 20 s lease
 * is their only deadline); the holder then releases and every waiter gets the lock in turn. */
static long switches_while_waiting(rl_wait_hook hook, void *hook_userdata) {
    rl_client *holder = new_client(g_server.url, 0), *waiting = new_client(g_server.url, 0);
    rl_lock *held = new_lock(holder, "idle");
    rl_error e = {0};
    if (rl_lock_acquire(held, 1, 20000, 0, NULL, NULL, &e) != RL_OK) return -1;
    rl_lock *lock = new_lock(waiting, "idle");
    static waiter ws[WAITERS];
    static pthread_t threads[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        ws[i] = (waiter){.lock = lock,
                         .context = (uint64_t)i + 1,
                         .wait_ms = 30000,
                         .hold_ms = 1,
                         .hook = hook,
                         .hook_userdata = hook_userdata};
        pthread_create(&threads[i], NULL, waiter_main, &ws[i]);
    }
    sleep_ms(1000); /* all of them subscribed and asleep */
    long before = voluntary_switches();
    sleep_ms(1500);
    long during = voluntary_switches() - before;
    rl_lock_release(held, 1, NULL);
    int acquired = 0;
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(threads[i], NULL);
        acquired += ws[i].status == RL_OK;
    }
    rl_lock_free(lock);
    rl_lock_free(held);
    rl_client_free(waiting);
    rl_client_free(holder);
    return acquired == WAITERS ? during : -2;
}

TEST(waiters_without_a_hook_sleep_until_something_changes) {
    long during = switches_while_waiting(NULL, NULL);
    CHECK_MSG(during >= 0, "the waiters did not all get the lock (%ld)", during);
    /* Waking every 50 ms, 100 threads switch about 3000 times in 1.5 s. */
    CHECK_MSG(during < 300, "%ld voluntary switches while %d waiters slept", during, WAITERS);
}

TEST(waiters_with_a_hook_run_it_every_slice) {
    _Atomic int calls = 0;
    long during = switches_while_waiting(count_calls, &calls);
    CHECK_MSG(during >= 0, "the waiters did not all get the lock (%ld)", during);
    /* 100 threads, 2.5 s of waiting, a call every 50 ms: about 5000 calls. */
    CHECK_MSG(calls > 1000, "the hook ran %d times", (int)calls);
}
