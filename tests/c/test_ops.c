/* Operating redlease: the stats counters, fixed-lease extend/reacquire, the hand-off token,
 * rl_inspect on every kind and rl_scan_locks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TEST(ops_stats_count_acquires_waits_and_losses) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "st"), *lb = new_lock(b, "st");
    rl_stats s;
    CHECK_OK(rl_lock_acquire(la, 1, 60000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(la, 1, 60000, 0, NULL, NULL, err)); /* a re-entry counts too */
    rl_client_stats(a, &s);
    CHECK_INT(s.acquisitions, 2);
    CHECK_INT(s.holds, 1);
    CHECK_INT(s.waits, 0);
    waiter w = {.lock = lb, .context = 1, .wait_ms = 5000, .hold_ms = 1};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    rl_client_stats(b, &s);
    CHECK_SOON((rl_client_stats(b, &s), s.waiters == 1), 2000);
    sleep_ms(200);
    CHECK_OK(rl_lock_release(la, 1, err));
    CHECK_OK(rl_lock_release(la, 1, err));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    rl_client_stats(b, &s);
    CHECK_INT(s.waits, 1);
    CHECK_INT(s.waiters, 0);
    CHECK_INT(s.acquisitions, 1);
    CHECK_MSG(s.wait_total_us >= 150000 && s.wait_max_us == s.wait_total_us, "waited %llu us",
              (unsigned long long)s.wait_total_us);
    /* A hold deleted under its holder: its release finds it gone, counted by reason. */
    CHECK_OK(rl_lock_acquire(la, 1, 60000, 0, NULL, NULL, err));
    raw_int(g_raw, "DEL st");
    CHECK_STATUS(rl_lock_release(la, 1, err), RL_LOST);
    rl_client_stats(a, &s);
    CHECK_INT(s.lost[RL_LOST_DELETED], 1);
    CHECK_INT(s.lost_total, 1);
    CHECK_INT(s.holds, 0);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(ops_extend_and_reacquire_fixed_leases) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "fx");
    CHECK_STATUS(rl_lock_extend(l, 1, 1000, 0, err), RL_NOT_OWNED);
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_extend(l, 1, 20000, 0, err));
    long long pttl = raw_int(g_raw, "PTTL fx");
    CHECK_MSG(pttl > 23000 && pttl <= 25000, "extend added to what was left: %lld", pttl);
    CHECK_OK(rl_lock_extend(l, 1, 3000, 1, err));
    pttl = raw_int(g_raw, "PTTL fx");
    CHECK_MSG(pttl > 2000 && pttl <= 3000, "replace set it: %lld", pttl);
    CHECK_OK(rl_lock_reacquire(l, 1, err));
    pttl = raw_int(g_raw, "PTTL fx");
    CHECK_MSG(pttl > 4000 && pttl <= 5000, "reacquire: the hold's own lease again: %lld", pttl);
    CHECK_STATUS(rl_lock_extend(l, 1, 0, 0, err), RL_ERR_ARGUMENT);
    /* Gone from Redis: nothing is revived, and the hold is lost. */
    raw_int(g_raw, "DEL fx");
    CHECK_STATUS(rl_lock_extend(l, 1, 1000, 0, err), RL_LOST);
    CHECK_INT(raw_int(g_raw, "EXISTS fx"), 0);
    CHECK(rl_lock_lost(l, 1, NULL));
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    /* Watchdog mode: refused, the lease left as the watchdog keeps it. */
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_STATUS(rl_lock_extend(l, 1, 1000, 0, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_reacquire(l, 1, err), RL_ERR_ARGUMENT);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(ops_hand_off_token) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "job"), *lb = new_lock(b, "job");
    char token[RL_TOKEN_MAX];
    CHECK_STATUS(rl_lock_hand_off(la, 1, token, err), RL_NOT_OWNED);
    CHECK_OK(rl_lock_acquire(la, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(la, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_hand_off(la, 1, token, err));
    char want[RL_TOKEN_MAX];
    snprintf(want, sizeof want, "%s:1", rl_client_id(a));
    CHECK(strcmp(token, want) == 0);
    CHECK_INT(rl_lock_local_holds(la, 1), 0);
    CHECK_STATUS(rl_lock_release(la, 1, err), RL_NOT_OWNED); /* no longer this context's */
    CHECK_INT(raw_int(g_raw, "EXISTS job"), 1);
    /* Refusals: not a token; a well-formed token of an owner that holds nothing. */
    CHECK_STATUS(rl_lock_release_token(lb, "nonsense", err), RL_ERR_ARGUMENT);
    char forged[RL_TOKEN_MAX];
    snprintf(forged, sizeof forged, "%s:2", rl_client_id(a));
    CHECK_STATUS(rl_lock_release_token(lb, forged, err), RL_NOT_OWNED);
    CHECK_INT(raw_int(g_raw, "EXISTS job"), 1);
    /* Another client releases it, both holds at once; then the token is spent. */
    CHECK_OK(rl_lock_release_token(lb, token, err));
    CHECK_INT(raw_int(g_raw, "EXISTS job"), 0);
    CHECK_STATUS(rl_lock_release_token(lb, token, err), RL_NOT_OWNED);
    rl_stats s;
    rl_client_stats(a, &s);
    CHECK_INT(s.lost_total, 0); /* handed off, not lost */
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(ops_inspect_reentrant_fenced_counter_and_other) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "insp");
    rl_inspection *in;
    CHECK_OK(rl_inspect(c, "insp", 4, &in, err));
    CHECK_INT(in->kind, RL_KEY_NONE);
    rl_inspection_free(in);
    CHECK_OK(rl_lock_acquire(l, 9, 20000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 9, 20000, 0, NULL, NULL, err));
    CHECK_OK(rl_inspect(c, "insp", 4, &in, err));
    CHECK_INT(in->kind, RL_KEY_REENTRANT);
    CHECK_INT(in->n_owners, 1);
    CHECK(strcmp(in->owners[0].client_id, rl_client_id(c)) == 0);
    CHECK(strcmp(in->owners[0].context, "9") == 0);
    CHECK_INT(in->owners[0].count, 2);
    CHECK_INT(in->owners[0].local, 1);
    CHECK(in->owners[0].lease_ms > 19000 && in->lease_ms <= 20000);
    rl_inspection_free(in);
    rl_lock *f = new_kind(c, RL_LOCK_FENCED, "fen");
    CHECK_OK(rl_lock_acquire(f, 1, 20000, 0, NULL, NULL, err));
    CHECK_OK(rl_inspect(c, "fen", 3, &in, err));
    CHECK_INT(in->kind, RL_KEY_FENCED);
    CHECK_INT(in->last_token, 1);
    rl_inspection_free(in);
    raw_int(g_raw, "SET sem 3");
    raw_int(g_raw, "SET text hello");
    raw_int(g_raw, "HSET user name ann");
    CHECK_OK(rl_inspect(c, "sem", 3, &in, err));
    CHECK_INT(in->kind, RL_KEY_COUNTER);
    CHECK_INT(in->count, 3);
    rl_inspection_free(in);
    CHECK_OK(rl_inspect(c, "text", 4, &in, err));
    CHECK_INT(in->kind, RL_KEY_OTHER);
    CHECK(strcmp(in->type, "string") == 0);
    rl_inspection_free(in);
    CHECK_OK(rl_inspect(c, "user", 4, &in, err));
    CHECK_INT(in->kind, RL_KEY_OTHER);
    rl_inspection_free(in);
    CHECK_STATUS(rl_inspect(c, "", 0, &in, err), RL_ERR_ARGUMENT);
    rl_lock_free(l);
    rl_lock_free(f);
    rl_client_free(c);
}

TEST(ops_inspect_fair_queue_and_readers) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *fair = new_kind(c, RL_LOCK_FAIR, "fq");
    CHECK_OK(rl_lock_acquire(fair, 1, 30000, 0, NULL, NULL, err));
    crowd w;
    crowd_start(&w, 2, RL_LOCK_FAIR, "fq", 20000, 1, 100);
    rl_inspection *in = NULL;
    for (int64_t until = now_ms() + 3000; now_ms() < until; sleep_ms(20)) {
        CHECK_OK(rl_inspect(c, "fq", 2, &in, err));
        if (in->n_queue == 2) break;
        rl_inspection_free(in);
        in = NULL;
    }
    CHECK(in != NULL);
    CHECK_INT(in->kind, RL_KEY_FAIR);
    CHECK_INT(in->n_owners, 1);
    CHECK(strcmp(in->queue[0].client_id, rl_client_id(w.clients[0])) == 0);
    CHECK(strcmp(in->queue[1].client_id, rl_client_id(w.clients[1])) == 0);
    CHECK_MSG(in->queue[0].timeout_ms > 30000, "%lld", (long long)in->queue[0].timeout_ms);
    CHECK(in->queue[1].timeout_ms > in->queue[0].timeout_ms);
    CHECK_INT(in->subscribers, 2);
    rl_inspection_free(in);
    CHECK_OK(rl_lock_release(fair, 1, err));
    crowd_end(&w);

    rl_lock *r = new_kind(c, RL_LOCK_READ, "rw");
    CHECK_OK(rl_lock_acquire(r, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(r, 2, 20000, 0, NULL, NULL, err));
    CHECK_OK(rl_inspect(c, "rw", 2, &in, err));
    CHECK_INT(in->kind, RL_KEY_RW);
    CHECK(strcmp(in->mode, "read") == 0);
    CHECK_INT(in->n_owners, 2);
    for (size_t i = 0; i < 2; i++) {
        rl_owner_info *o = &in->owners[i];
        int64_t want = strcmp(o->context, "1") == 0 ? 10000 : 20000;
        CHECK_MSG(o->lease_ms > want - 1000 && o->lease_ms <= want, "reader %s: %lld", o->context,
                  (long long)o->lease_ms);
        CHECK_INT(o->write, 0);
    }
    rl_inspection_free(in);
    rl_lock_free(fair);
    rl_lock_free(r);
    rl_client_free(c);
}

TEST(ops_scan_finds_locks_only) {
    rl_client *c = new_client(g_server.url, 0);
    for (int i = 0; i < 300; i++) {
        raw_int(g_raw, "SET filler:%d x", i);
        raw_int(g_raw, "HSET record:%d a b", i);
    }
    rl_lock *locks[5];
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "job:%d", i);
        locks[i] = new_lock(c, name);
        CHECK_OK(rl_lock_acquire(locks[i], 1, 30000, 0, NULL, NULL, err));
    }
    size_t found = 0, steps = 0;
    uint64_t cursor = 0;
    do {
        rl_scan_page *p;
        CHECK_OK(rl_scan_locks(c, cursor, NULL, 100, &p, err));
        for (size_t i = 0; i < p->n; i++)
            found += strncmp(p->names[i], "job:", 4) == 0;
        CHECK_INT(p->n <= 5, 1);
        cursor = p->next;
        steps++;
        rl_scan_page_free(p);
    } while (cursor != 0);
    CHECK_INT(found, 5);
    CHECK_MSG(steps > 2, "COUNT bounds each step: %zu steps", steps);
    rl_scan_page *p;
    CHECK_STATUS(rl_scan_locks(c, 0, NULL, 0, &p, err), RL_ERR_ARGUMENT);
    for (int i = 0; i < 5; i++)
        rl_lock_free(locks[i]);
    rl_client_free(c);
}

/* rl_watch_wait: polls (sleeps) without keyspace notifications, wakes on a change with them. */
typedef struct delayed_set {
    int64_t delay_ms;
} delayed_set;

static void *set_later(void *arg) {
    delayed_set *d = arg;
    sleep_ms(d->delay_ms);
    redisContext *r = server_connect(&g_server);
    freeReplyObject(raw(r, "HSET watched a:1 1"));
    redisFree(r);
    return NULL;
}

TEST(ops_watch_wait_polls_or_wakes_on_a_change) {
    rl_client *c = new_client(g_server.url, 0);
    int notified = -1;
    int64_t start = now_ms();
    CHECK_OK(rl_watch_wait(c, "watched", 7, 300, NULL, NULL, &notified, err));
    CHECK_INT(notified, 0);
    CHECK(now_ms() - start >= 290);
    freeReplyObject(raw(g_raw, "CONFIG SET notify-keyspace-events KA"));
    delayed_set d = {300};
    pthread_t t;
    pthread_create(&t, NULL, set_later, &d);
    start = now_ms();
    CHECK_OK(rl_watch_wait(c, "watched", 7, 20000, NULL, NULL, &notified, err));
    int64_t waited = now_ms() - start;
    pthread_join(t, NULL);
    freeReplyObject(raw(g_raw, "CONFIG SET notify-keyspace-events %s", ""));
    CHECK_INT(notified, 1);
    CHECK_MSG(waited >= 250 && waited < 10000, "woken by the change after %lld ms",
              (long long)waited);
    CHECK_STATUS(rl_watch_wait(c, "", 0, 10, NULL, NULL, &notified, err), RL_ERR_ARGUMENT);
    rl_client_free(c);
}

static int stop_at_once(void *ud) {
    (*(int *)ud)++;
    return 1;
}

/* An interrupted wait says so in its error too: the Python binding keeps the KeyboardInterrupt
 * only for RL_ABORTED (with a cleared error it raised LockError("ok") in its place). */
TEST(ops_watch_wait_interrupted_by_its_hook_reports_aborted) {
    rl_client *c = new_client(g_server.url, 0);
    for (int notifications = 0; notifications < 2; notifications++) {
        freeReplyObject(
            raw(g_raw, "CONFIG SET notify-keyspace-events %s", notifications ? "KA" : ""));
        int asked = 0, notified = -1;
        rl_error e;
        int64_t start = now_ms();
        CHECK_INT(rl_watch_wait(c, "watched", 7, 20000, stop_at_once, &asked, &notified, &e),
                  RL_ABORTED);
        CHECK_INT(e.status, RL_ABORTED);
        CHECK_INT(asked, 1);
        CHECK_INT(notified, notifications);
        CHECK_MSG(now_ms() - start < 5000, "ended %lld ms later", (long long)(now_ms() - start));
    }
    freeReplyObject(raw(g_raw, "CONFIG SET notify-keyspace-events %s", ""));
    rl_client_free(c);
}
