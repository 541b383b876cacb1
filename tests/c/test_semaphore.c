/* The semaphore (Redisson's RSemaphore): its layout, permits counted per client, waits woken by
 * releases, timeouts, never more holders than permits, and bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "family_kit.h"

TEST(semaphore_counts_permits_in_redissons_layout) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "exports");
    int set = -1;
    CHECK_OK(rl_semaphore_try_set_permits(s, 3, &set, err));
    CHECK_INT(set, 1);
    CHECK_INT(raw_int(g_raw, "GET exports"), 3); /* a plain string, as RSemaphore keeps it */
    CHECK_OK(rl_semaphore_try_set_permits(s, 10, &set, err));
    CHECK_INT(set, 0); /* it exists: left alone */
    CHECK_OK(rl_semaphore_acquire(s, 2, 0, NULL, NULL, err));
    CHECK_INT(raw_int(g_raw, "GET exports"), 1);
    CHECK_INT(rl_semaphore_held(s), 2);
    CHECK_STATUS(rl_semaphore_acquire(s, 2, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    int64_t n = -1;
    CHECK_OK(rl_semaphore_available(s, &n, err));
    CHECK_INT(n, 1);
    CHECK_OK(rl_semaphore_release(s, 1, err));
    CHECK_INT(raw_int(g_raw, "GET exports"), 2);
    CHECK_STATUS(rl_semaphore_release(s, 2, err), RL_NOT_OWNED); /* it holds 1 */
    CHECK_INT(raw_int(g_raw, "GET exports"), 2);
    CHECK_OK(rl_semaphore_release(s, 1, err));
    CHECK_INT(rl_semaphore_held(s), 0);
    CHECK_OK(rl_semaphore_add_permits(s, 2, err));
    CHECK_INT(raw_int(g_raw, "GET exports"), 5);
    CHECK_OK(rl_semaphore_add_permits(s, -1, err));
    CHECK_INT(raw_int(g_raw, "GET exports"), 4);
    CHECK_OK(rl_semaphore_drain(s, &n, err));
    CHECK_INT(n, 4);
    CHECK_INT(raw_int(g_raw, "GET exports"), 0);
    CHECK_INT(rl_semaphore_held(s), 4); /* drained permits are this client's to give back */
    CHECK_OK(rl_semaphore_release(s, 4, err));
    CHECK_INT(raw_int(g_raw, "GET exports"), 4);
    CHECK_OK(rl_semaphore_acquire(s, 0, 0, NULL, NULL, err)); /* nothing taken */
    CHECK_INT(raw_int(g_raw, "GET exports"), 4);
    rl_semaphore_free(s);
    rl_client_free(c);
}

TEST(semaphore_permits_are_the_clients_not_the_objects) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_semaphore *a1 = new_semaphore(a, "pool"), *a2 = new_semaphore(a, "pool");
    rl_semaphore *b1 = new_semaphore(b, "pool");
    CHECK_OK(rl_semaphore_try_set_permits(a1, 2, NULL, err));
    CHECK_OK(rl_semaphore_acquire(a1, 1, 0, NULL, NULL, err));
    CHECK_INT(rl_semaphore_held(a2), 1);                          /* same client, same name */
    CHECK_STATUS(rl_semaphore_release(b1, 1, err), RL_NOT_OWNED); /* another client took none */
    CHECK_OK(rl_semaphore_release(a2, 1, err));
    rl_semaphore_free(a1);
    rl_semaphore_free(a2);
    rl_semaphore_free(b1);
    rl_client_free(a);
    rl_client_free(b);
}

typedef struct sem_waiter {
    rl_semaphore *s;
    int64_t permits, wait_ms;
    rl_status status;
    int64_t done_at;
} sem_waiter;

static void *sem_waiter_main(void *arg) {
    sem_waiter *w = arg;
    w->status = rl_semaphore_acquire(w->s, w->permits, w->wait_ms, NULL, NULL, NULL);
    w->done_at = now_ms();
    return NULL;
}

TEST(semaphore_release_wakes_a_waiter) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_semaphore *sa = new_semaphore(a, "wake"), *sb = new_semaphore(b, "wake");
    CHECK_OK(rl_semaphore_try_set_permits(sa, 1, NULL, err));
    CHECK_OK(rl_semaphore_acquire(sa, 1, 0, NULL, NULL, err));
    sem_waiter w = {.s = sb, .permits = 1, .wait_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, sem_waiter_main, &w);
    CHECK_SOON(subscribers("redisson_sc:{wake}") == 1, 2000); /* Redisson's channel */
    sleep_ms(200);
    CHECK_INT(w.done_at, 0); /* still waiting */
    int64_t released_at = now_ms();
    CHECK_OK(rl_semaphore_release(sa, 1, err));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_MSG(w.done_at - released_at < 1000, "woken after %lld ms",
              (long long)(w.done_at - released_at));
    CHECK_INT(rl_semaphore_held(sb), 1);
    CHECK_OK(rl_semaphore_release(sb, 1, err));
    rl_semaphore_free(sa);
    rl_semaphore_free(sb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(semaphore_try_set_wakes_a_waiter_and_a_wait_times_out) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_semaphore *sa = new_semaphore(a, "later"), *sb = new_semaphore(b, "later");
    int64_t t0 = now_ms();
    CHECK_STATUS(rl_semaphore_acquire(sb, 1, 300, NULL, NULL, err), RL_NOT_ACQUIRED);
    int64_t waited = now_ms() - t0;
    CHECK_MSG(waited >= 290 && waited < 3000, "waited %lld ms", (long long)waited);
    sem_waiter w = {.s = sb, .permits = 2, .wait_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, sem_waiter_main, &w);
    sleep_ms(300);
    CHECK_INT(w.done_at, 0);
    CHECK_OK(rl_semaphore_try_set_permits(sa, 2, NULL, err)); /* publishes the new count */
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_MSG(w.done_at - t0 < 5000, "woken after %lld ms", (long long)(w.done_at - t0));
    CHECK_INT(raw_int(g_raw, "GET later"), 0);
    CHECK_OK(rl_semaphore_release(sb, 2, err));
    rl_semaphore_free(sa);
    rl_semaphore_free(sb);
    rl_client_free(a);
    rl_client_free(b);
}

enum { HOLDERS = 6, PERMITS = 3, ROUNDS = 40 };
static atomic_int inside, most_inside, cycles_done;

typedef struct cycler {
    rl_semaphore *s;
    rl_status failed;
} cycler;

static void *cycler_main(void *arg) {
    cycler *cy = arg;
    for (int i = 0; i < ROUNDS; i++) {
        rl_status st = rl_semaphore_acquire(cy->s, 1, 10000, NULL, NULL, NULL);
        if (st != RL_OK) {
            cy->failed = st;
            return NULL;
        }
        int now_inside = atomic_fetch_add(&inside, 1) + 1;
        for (int seen = atomic_load(&most_inside);
             now_inside > seen && !atomic_compare_exchange_weak(&most_inside, &seen, now_inside);)
            ;
        sleep_ms(1);
        atomic_fetch_sub(&inside, 1);
        atomic_fetch_add(&cycles_done, 1);
        st = rl_semaphore_release(cy->s, 1, NULL);
        if (st != RL_OK) {
            cy->failed = st;
            return NULL;
        }
    }
    return NULL;
}

TEST(semaphore_never_lets_in_more_holders_than_permits) {
    atomic_store(&inside, 0);
    atomic_store(&most_inside, 0);
    atomic_store(&cycles_done, 0);
    rl_client *clients[2] = {new_client(g_server.url, 0), new_client(g_server.url, 0)};
    rl_semaphore *sems[HOLDERS];
    cycler cyclers[HOLDERS];
    pthread_t threads[HOLDERS];
    for (int i = 0; i < HOLDERS; i++) {
        sems[i] = new_semaphore(clients[i % 2], "cap");
        cyclers[i] = (cycler){sems[i], RL_OK};
    }
    CHECK_OK(rl_semaphore_try_set_permits(sems[0], PERMITS, NULL, err));
    for (int i = 0; i < HOLDERS; i++)
        pthread_create(&threads[i], NULL, cycler_main, &cyclers[i]);
    for (int i = 0; i < HOLDERS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < HOLDERS; i++)
        CHECK_MSG(cyclers[i].failed == RL_OK, "holder %d: %s", i,
                  rl_status_name(cyclers[i].failed));
    CHECK_INT(atomic_load(&cycles_done), HOLDERS * ROUNDS);
    CHECK_MSG(atomic_load(&most_inside) <= PERMITS, "%d holders at once",
              atomic_load(&most_inside));
    CHECK_MSG(atomic_load(&most_inside) >= 2, "never more than %d holder at once",
              atomic_load(&most_inside));
    CHECK_INT(raw_int(g_raw, "GET cap"), PERMITS);
    for (int i = 0; i < HOLDERS; i++)
        rl_semaphore_free(sems[i]);
    rl_client_free(clients[0]);
    rl_client_free(clients[1]);
}

TEST(semaphore_bad_input_is_refused) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = NULL;
    CHECK_STATUS(rl_semaphore_new(c, "", 0, &s, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_semaphore_new(c, NULL, 3, &s, err), RL_ERR_ARGUMENT);
    s = new_semaphore(c, "bad");
    CHECK_STATUS(rl_semaphore_try_set_permits(s, -1, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_semaphore_acquire(s, -2, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_semaphore_acquire(s, 1, -5, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_semaphore_release(s, -1, err), RL_ERR_ARGUMENT);
    rl_error e;
    CHECK(rl_semaphore_release(s, 1, &e) == RL_NOT_OWNED);
    CHECK_MSG(strstr(e.message, "cannot release 1 permit(s), this client holds 0"), "%s",
              e.message);
    CHECK_INT(raw_int(g_raw, "EXISTS bad"), 0); /* nothing was written */
    freeReplyObject(raw(g_raw, "HSET lockname owner 1"));
    rl_semaphore *wrong = new_semaphore(c, "lockname"); /* the name holds a lock */
    CHECK_STATUS(rl_semaphore_acquire(wrong, 1, 0, NULL, NULL, err), RL_ERR_SERVER);
    CHECK_STATUS(rl_semaphore_try_set_permits(wrong, 1, NULL, err), RL_ERR_SERVER);
    CHECK(rl_semaphore_acquire(wrong, 1, 0, NULL, NULL, &e) == RL_ERR_SERVER);
    CHECK_MSG(strstr(e.message, "\"lockname\" holds a value of another type (hash); redlease "
                                "needs it for a semaphore"),
              "%s", e.message);
    CHECK_INT(raw_int(g_raw, "HGET lockname owner"), 1);
    rl_semaphore_free(wrong);
    rl_semaphore_free(s);
    rl_client_free(c);
    CHECK_STATUS(rl_semaphore_acquire(NULL, 1, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
}

TEST(semaphore_on_a_closed_client_answers_closed) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "closing");
    rl_client_free(c); /* s keeps the memory alive */
    CHECK_STATUS(rl_semaphore_try_set_permits(s, 1, NULL, err), RL_ERR_CLOSED);
    CHECK_STATUS(rl_semaphore_acquire(s, 1, 0, NULL, NULL, err), RL_ERR_CLOSED);
    CHECK_INT(rl_semaphore_held(s), 0);
    rl_semaphore_free(s);
}

TEST(semaphore_never_given_permits_says_so) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "unset");
    rl_error e;
    for (int64_t wait_ms = 0; wait_ms <= 100; wait_ms += 100) {
        CHECK(rl_semaphore_acquire(s, 1, wait_ms, NULL, NULL, &e) == RL_NOT_ACQUIRED);
        CHECK_MSG(strstr(e.message, "semaphore \"unset\" has no permits (it does not exist): "
                                    "set them with try_set_permits or add_permits"),
                  "%s", e.message);
    }
    CHECK_INT(raw_int(g_raw, "EXISTS unset"), 0); /* asking wrote nothing */
    int set = 0;
    CHECK_OK(rl_semaphore_try_set_permits(s, 0, &set, err)); /* exists, none free: the usual */
    CHECK(rl_semaphore_acquire(s, 1, 0, NULL, NULL, &e) == RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "1 permit(s) not free now") && !strstr(e.message, "no permits"),
              "%s", e.message);
    rl_semaphore_free(s);
    rl_client_free(c);
}
