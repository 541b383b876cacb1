/* Fork: a child never renews or releases the parent's holds and can take its own; its inherited
 * client works on every deployment, whatever the parent's threads were doing. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_kit.h"
#include "harness.h"
#include "random.h"
#include "sentinel_kit.h"

/* Runs in the child; the exit code says which check failed (0 = all passed). */
static int child_checks(rl_client *c, rl_lock *held_by_parent) {
    if (rl_lock_local_holds(held_by_parent, 1) != 0) return 10;
    if (rl_lock_release(held_by_parent, 1, NULL) != RL_NOT_OWNED) return 11;
    int held = -1;
    if (rl_lock_is_held(held_by_parent, 1, &held, NULL) != RL_OK || held != 0) return 12;
    if (rl_lock_acquire(held_by_parent, 1, 5000, 0, NULL, NULL, NULL) != RL_NOT_ACQUIRED) return 13;
    rl_lock *own;
    if (rl_lock_new(c, "child-own", 9, &own, NULL) != RL_OK) return 14;
    if (rl_lock_acquire(own, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, NULL) != RL_OK) return 15;
    if (rl_lock_release(own, 1, NULL) != RL_OK) return 16;
    rl_lock_free(own);
    return 0;
}

TEST(fork_child_cannot_touch_parent_holds) {
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer cannot start threads in the child of a multi-threaded fork; the plain and
     * ASan builds run this test. */
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    rl_client *c = new_client(g_server.url, 600);
    rl_lock *l = new_lock(c, "forked");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    char parent_id[37];
    snprintf(parent_id, sizeof parent_id, "%s", rl_client_id(c));
    pid_t pid = fork();
    if (pid == 0) {
        int rc = child_checks(c, l);
        if (rc == 0 && strcmp(rl_client_id(c), parent_id) == 0) rc = 17;
        rl_lock_free(l);
        rl_client_free(c);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed check %d",
              WEXITSTATUS(status));
    sleep_ms(1000); /* the parent still renews its hold: more than a lease later it is there */
    int64_t count;
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 1);
    CHECK(raw_int(g_raw, "PTTL forked") > 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS forked"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A child that never touches an inherited client (whose event thread the parent had started)
 * must still be able to free it, after starting threads of its own: the parent's thread handles
 * are not the child's to join. */
TEST(fork_child_frees_an_unused_inherited_client) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    rl_client *inherited = new_client(g_server.url, 600);
    rl_lock *l = new_lock(inherited, "gone");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    freeReplyObject(raw(g_raw, "DEL gone")); /* a loss event: the event thread starts */
    int64_t t0 = now_ms();
    while (!rl_lock_lost(l, 1, NULL) && now_ms() - t0 < 3000)
        sleep_ms(10);
    CHECK(rl_lock_lost(l, 1, NULL));
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); /* a hang fails the test instead of the run */
        rl_client *own = new_client(g_server.url, 600);
        rl_lock *mine;
        if (!own || rl_lock_new(own, "mine", 4, &mine, NULL) != RL_OK) _exit(20);
        if (rl_lock_acquire(mine, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, NULL) != RL_OK) _exit(21);
        rl_lock_free(l);
        rl_client_free(inherited); /* never used in the child */
        if (rl_lock_release(mine, 1, NULL) != RL_OK) _exit(22);
        rl_lock_free(mine);
        rl_client_free(own);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s %d",
              WIFSIGNALED(status) ? "killed by signal" : "failed check",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(inherited);
}

/* Unlock request ids (the latch's name) are random bytes: a forked child must not hand out the
 * ones its parent hands out next, whatever the parent drew before the fork. */
TEST(fork_child_draws_other_request_ids) {
    rl_client *c = new_client(g_server.url, 0); /* a client: the fork handlers are in place */
    char before[33], parent_id[4][33], child_id[4][33];
    rl_random_hex(before, 16); /* the parent has drawn: anything it keeps is the child's too */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 4; i++)
            rl_random_hex(child_id[i], 16);
        _exit(write(fds[1], child_id, sizeof child_id) == (ssize_t)sizeof child_id ? 0 : 1);
    }
    for (int i = 0; i < 4; i++)
        rl_random_hex(parent_id[i], 16);
    close(fds[1]);
    CHECK(read(fds[0], child_id, sizeof child_id) == (ssize_t)sizeof child_id);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            CHECK_MSG(strcmp(parent_id[i], child_id[j]) != 0, "parent %d = child %d: %s", i, j,
                      child_id[j]);
    CHECK(strcmp(before, parent_id[0]) != 0);
    rl_client_free(c);
}

/* ---- a child forked while a parent thread waits, on every deployment ------------------------ */

/* Waits up to `ms` for the child; a child still running then is killed. 0 when it exited 0, else
 * the reason in why. */
static int child_result(pid_t pid, int64_t ms, char *why, size_t size) {
    int status = 0;
    int64_t until = now_ms() + ms;
    pid_t done;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < until)
        sleep_ms(20);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        snprintf(why, size, "the child hung (killed after %lld ms)", (long long)ms);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    snprintf(why, size, "the child %s %d",
             WIFSIGNALED(status) ? "was killed by signal" : "failed check",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return -1;
}

static size_t subscriptions(rl_client *c) {
    rl_stats s;
    rl_client_stats(c, &s);
    return s.subscriptions;
}

/* In the child: the inherited client works for a lock of its own, cannot take the one the parent
 * waits for, and closes. */
static int child_uses_inherited(rl_client *c, rl_lock *waited) {
    if (rl_lock_acquire(waited, 7, 5000, 0, NULL, NULL, NULL) != RL_NOT_ACQUIRED) return 30;
    rl_lock *own;
    if (rl_lock_new(c, "fork-child-own", 14, &own, NULL) != RL_OK) return 31;
    if (rl_lock_acquire(own, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, NULL) != RL_OK) return 32;
    if (rl_lock_release(own, 1, NULL) != RL_OK) return 33;
    rl_lock_free(own);
    return 0;
}

/* A thread of the parent waits on a lock of `url`'s client (held by another client) while the
 * process forks: the child's first use of the client must not hang (waiters of the parent's
 * threads are in its condition variables and mutexes), and the parent's waiter still gets the
 * lock once it is released. */
static void fork_while_a_thread_waits(const char *url) {
    rl_client *holder = new_client(url, 0), *c = new_client(url, 0);
    rl_lock *held = new_lock(holder, "fork-waited"), *waited = new_lock(c, "fork-waited");
    rl_lock *renewed = new_lock(c, "fork-renewed"); /* the watchdog and its connections run too */
    CHECK_OK(rl_lock_acquire(held, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(renewed, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    waiter w = {.lock = waited, .context = 2, .wait_ms = 20000};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    CHECK_SOON(subscriptions(c) > 0, 5000);
    sleep_ms(100); /* the waiter is inside its wait */
    pid_t pid = fork();
    if (pid == 0) {
        int rc = child_uses_inherited(c, waited);
        rl_lock_free(waited);
        rl_lock_free(renewed);
        rl_client_free(c);
        _exit(rc);
    }
    char why[120];
    int child = child_result(pid, 15000, why, sizeof why);
    CHECK_OK(rl_lock_release(held, 1, err));
    pthread_join(t, NULL);
    CHECK_MSG(child == 0, "%s", why);
    CHECK_INT(w.status, RL_OK);
    CHECK_OK(rl_lock_release(waited, 2, err));
    CHECK_OK(rl_lock_release(renewed, 1, err));
    rl_lock_free(held), rl_lock_free(waited), rl_lock_free(renewed);
    rl_client_free(holder), rl_client_free(c);
}

TEST(fork_while_a_thread_waits_redis) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    fork_while_a_thread_waits(g_server.url);
}

TEST(fork_while_a_thread_waits_cluster) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    const char *url = test_cluster_url();
    CHECK_MSG(url, "no cluster");
    fork_while_a_thread_waits(url);
}

TEST(fork_while_a_thread_waits_sentinel) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    test_server sentinel;
    CHECK_MSG(sentinel_start(&sentinel, &g_server) == 0, "no sentinel");
    fork_while_a_thread_waits(sentinel.url);
    server_stop(&sentinel);
}

/* ---- a parent's async call, inherited by the child ------------------------------------------ */

static atomic_int child_done_status = -1;

static void child_done(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud) {
    (void)call, (void)value, (void)err, (void)ud;
    atomic_store(&child_done_status, (int)st);
}

static void parent_done(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud) {
    (void)call, (void)value, (void)err;
    atomic_store((atomic_int *)ud, (int)st);
}

/* In the child, once the client was used: freeing the parent's waiting call, then starting one of
 * its own (the workers start in the child and run what is queued) must neither touch the parent's
 * subscriber state (freed in the child) nor hang; the child's own call works. */
static int child_frees_inherited_call(rl_call *inherited, rl_lock *l) {
    int locked = 0;
    if (rl_lock_is_locked(l, &locked, NULL) != RL_OK || !locked) return 39; /* the child's state */
    rl_call_free(inherited);
    rl_call *own = NULL;
    if (rl_lock_query_async(l, RL_QUERY_LOCKED, 1, child_done, NULL, &own, NULL) != RL_OK)
        return 40;
    int64_t until = now_ms() + 5000;
    while (atomic_load(&child_done_status) < 0 && now_ms() < until)
        sleep_ms(5);
    rl_call_free(own);
    if (atomic_load(&child_done_status) != RL_OK) return 41;
    return 0;
}

TEST(fork_child_frees_an_inherited_waiting_call) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    rl_client *holder = new_client(g_server.url, 0), *c = new_client(g_server.url, 0);
    rl_lock *held = new_lock(holder, "fork-async"), *l = new_lock(c, "fork-async");
    CHECK_OK(rl_lock_acquire(held, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    rl_acquire_options opts;
    rl_acquire_options_init(&opts);
    atomic_int parent_status = -1;
    rl_call *call = NULL;
    CHECK_OK(rl_lock_acquire_async(l, 2, &opts, parent_done, &parent_status, &call, err));
    CHECK_SOON(subscriptions(c) > 0, 5000); /* waiting, on a notified ticket */
    pid_t pid = fork();
    if (pid == 0) {
        int rc = child_frees_inherited_call(call, l);
        rl_lock_free(l);
        rl_client_free(c);
        _exit(rc);
    }
    char why[120];
    int child = child_result(pid, 15000, why, sizeof why);
    CHECK_OK(rl_lock_release(held, 1, err));
    CHECK_SOON(atomic_load(&parent_status) >= 0, 5000);
    CHECK_MSG(child == 0, "%s", why);
    CHECK_INT(atomic_load(&parent_status), RL_OK); /* the parent's call goes on unharmed */
    CHECK_OK(rl_lock_release(l, 2, err));
    rl_call_free(call);
    rl_lock_free(held), rl_lock_free(l);
    rl_client_free(holder), rl_client_free(c);
}
