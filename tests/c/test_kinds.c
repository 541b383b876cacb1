/* The other lock kinds of docs/protocol.md: fencing tokens, the fair lock's queue, and the
 * read/write lock, each on the wire and in its semantics. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static rl_status try_acquire(rl_lock *l, uint64_t context, int64_t lease_ms, rl_error *err) {
    return rl_lock_acquire(l, context, lease_ms, 0, NULL, NULL, err);
}

TEST(fenced_tokens_increase_on_every_acquire_reentrant_ones_too) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FENCED, "ledger"),
            *lb = new_kind(b, RL_LOCK_FENCED, "ledger");
    CHECK_INT(rl_lock_token(la, 1), 0);
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    int64_t first = rl_lock_token(la, 1);
    CHECK_INT(first, 1);
    CHECK_INT(raw_int(g_raw, "GET redisson_lock_token:{ledger}"), 1);
    CHECK_INT(raw_int(g_raw, "PTTL redisson_lock_token:{ledger}"), -1); /* no TTL */
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));        /* reentrant */
    CHECK_INT(rl_lock_token(la, 1), 2);
    CHECK_STATUS(rl_lock_acquire(lb, 1, 10000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_INT(raw_int(g_raw, "GET redisson_lock_token:{ledger}"), 2); /* a refusal takes none */
    CHECK_OK(rl_lock_release(la, 1, err));
    CHECK_OK(rl_lock_release(la, 1, err));
    CHECK_INT(rl_lock_token(la, 1), 0);
    CHECK_OK(rl_lock_acquire(lb, 1, 10000, 0, NULL, NULL, err));
    CHECK_INT(rl_lock_token(lb, 1), 3);
    /* The lock itself is an ordinary Redisson lock hash. */
    char field[80];
    snprintf(field, sizeof field, "%s:1", rl_client_id(b));
    CHECK_INT(raw_int(g_raw, "HGET ledger %s", field), 1);
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(fenced_token_kept_per_context) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_kind(c, RL_LOCK_FENCED, "{tag}fenced");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_token:{tag}fenced"), 1);
    CHECK_INT(rl_lock_token(l, 2), 0); /* another context holds nothing */
    CHECK_INT(rl_lock_token(l, 1), 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(fair_waiters_acquire_in_arrival_order) {
    rl_client *holder = new_client(g_server.url, 0);
    rl_lock *lh = new_kind(holder, RL_LOCK_FAIR, "fifo");
    CHECK_OK(rl_lock_acquire(lh, 1, 20000, 0, NULL, NULL, err));
    enum { N = 4 };
    crowd waiters;
    crowd_start(&waiters, N, RL_LOCK_FAIR, "fifo", 15000, 50, 150); /* staggered arrivals */
    /* Everyone queued, in order, each with a deadline. */
    CHECK_INT(raw_int(g_raw, "LLEN redisson_lock_queue:{fifo}"), N);
    CHECK_INT(raw_int(g_raw, "ZCARD redisson_lock_timeout:{fifo}"), N);
    redisReply *q = raw(g_raw, "LRANGE redisson_lock_queue:{fifo} 0 -1");
    char first[80];
    snprintf(first, sizeof first, "%s:1", rl_client_id(waiters.clients[0]));
    CHECK(strcmp(q->element[0]->str, first) == 0);
    freeReplyObject(q);
    CHECK_OK(rl_lock_release(lh, 1, err));
    crowd_end(&waiters);
    for (int i = 0; i < N; i++) {
        CHECK_INT(waiters.ws[i].status, RL_OK);
        CHECK_MSG(waiters.ws[i].order == i + 1, "waiter %d acquired %d-th", i, waiters.ws[i].order);
    }
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_queue:{fifo}"), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_timeout:{fifo}"), 0);
    rl_lock_free(lh);
    rl_client_free(holder);
}

TEST(fair_waiter_that_gives_up_leaves_the_queue_and_moves_the_rest_forward) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0),
              *c = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FAIR, "line"), *lb = new_kind(b, RL_LOCK_FAIR, "line"),
            *lc = new_kind(c, RL_LOCK_FAIR, "line");
    CHECK_OK(rl_lock_acquire(la, 1, 20000, 0, NULL, NULL, err));
    /* One try never queues. */
    CHECK_STATUS(rl_lock_acquire(lb, 1, 5000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_queue:{line}"), 0);
    waiter wb = {.lock = lb, .context = 1, .wait_ms = 600, .hold_ms = 50},
           wc = {.lock = lc, .context = 1, .wait_ms = 8000, .hold_ms = 50};
    pthread_t tb, tc;
    pthread_create(&tb, NULL, waiter_main, &wb);
    sleep_ms(150);
    pthread_create(&tc, NULL, waiter_main, &wc);
    sleep_ms(150);
    char owner_c[80];
    snprintf(owner_c, sizeof owner_c, "%s:1", rl_client_id(c));
    redisReply *r = raw(g_raw, "ZSCORE redisson_lock_timeout:{line} %s", owner_c);
    long long before = atoll(r->str);
    freeReplyObject(r);
    pthread_join(tb, NULL);
    CHECK_INT(wb.status, RL_NOT_ACQUIRED);
    CHECK_INT(raw_int(g_raw, "LLEN redisson_lock_queue:{line}"), 1);
    r = raw(g_raw, "ZSCORE redisson_lock_timeout:{line} %s", owner_c);
    long long after = atoll(r->str);
    freeReplyObject(r);
    CHECK_INT(before - after, 600); /* moved forward by the leaver's wait window */
    int64_t released_at = now_ms();
    CHECK_OK(rl_lock_release(la, 1, err));
    pthread_join(tc, NULL);
    CHECK_INT(wc.status, RL_OK);
    CHECK_MSG(wc.acquired_at - released_at < 1000, "waiter c woken %lld ms after the release",
              (long long)(wc.acquired_at - released_at));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_lock_free(lc);
    rl_client_free(a);
    rl_client_free(b);
    rl_client_free(c);
}

TEST(fair_dead_waiter_is_purged_after_its_window) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FAIR, "purge"), *lb = new_kind(b, RL_LOCK_FAIR, "purge");
    CHECK_OK(rl_lock_acquire(la, 1, 300, 0, NULL, NULL, err));
    /* A waiter that died in the queue: its place, with a deadline 500 ms after the lease. */
    redisReply *r = raw(g_raw, "TIME");
    long long now = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    freeReplyObject(raw(g_raw, "RPUSH redisson_lock_queue:{purge} dead:1"));
    freeReplyObject(raw(g_raw, "ZADD redisson_lock_timeout:{purge} %lld dead:1", now + 800));
    int64_t start = now_ms();
    CHECK_OK(rl_lock_acquire(lb, 1, 5000, 5000, NULL, NULL, err));
    int64_t waited = now_ms() - start;
    CHECK_MSG(waited >= 600 && waited < 3000, "got in after %lld ms", (long long)waited);
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_queue:{purge}"), 0);
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(fair_force_unlock_wakes_the_head_waiter) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FAIR, "ff"), *lb = new_kind(b, RL_LOCK_FAIR, "ff");
    CHECK_OK(rl_lock_acquire(la, 1, 20000, 0, NULL, NULL, err));
    waiter w = {.lock = lb, .context = 1, .wait_ms = 10000, .hold_ms = 50};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    sleep_ms(300);
    int deleted = 0;
    int64_t at = now_ms();
    CHECK_OK(rl_lock_force_unlock(la, &deleted, err));
    CHECK_INT(deleted, 1);
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_MSG(w.acquired_at - at < 1000, "woken after %lld ms", (long long)(w.acquired_at - at));
    CHECK_STATUS(rl_lock_release(la, 1, err), RL_LOST);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(read_locks_share_and_exclude_writers) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *ra = new_kind(a, RL_LOCK_READ, "doc"), *rb = new_kind(b, RL_LOCK_READ, "doc"),
            *wb = new_kind(b, RL_LOCK_WRITE, "doc");
    CHECK_OK(rl_lock_acquire(ra, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(rb, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(ra, 1, 10000, 0, NULL, NULL, err)); /* reentrant read */
    /* Layout: mode, one field per reader with its holds, one key per read hold. */
    redisReply *r = raw(g_raw, "HGET doc mode");
    CHECK(strcmp(r->str, "read") == 0);
    freeReplyObject(r);
    char field[80];
    snprintf(field, sizeof field, "%s:1", rl_client_id(a));
    CHECK_INT(raw_int(g_raw, "HGET doc %s", field), 2);
    CHECK_INT(raw_int(g_raw, "EXISTS {doc}:%s:rwlock_timeout:1", field), 1);
    CHECK_INT(raw_int(g_raw, "EXISTS {doc}:%s:rwlock_timeout:2", field), 1);
    CHECK(raw_int(g_raw, "PTTL {doc}:%s:rwlock_timeout:2", field) > 9000);
    int locked = 0;
    CHECK_OK(rl_lock_is_locked(ra, &locked, err));
    CHECK_INT(locked, 1);
    CHECK_OK(rl_lock_is_locked(wb, &locked, err));
    CHECK_INT(locked, 0);
    CHECK_STATUS(try_acquire(wb, 1, 10000, err), RL_NOT_ACQUIRED); /* b reads: no upgrade */
    CHECK_STATUS(try_acquire(wb, 2, 10000, err), RL_NOT_ACQUIRED);
    CHECK_OK(rl_lock_release(ra, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS {doc}:%s:rwlock_timeout:2", field), 0);
    CHECK_OK(rl_lock_release(ra, 1, err));
    CHECK_OK(rl_lock_release(rb, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS doc"), 0);
    CHECK_OK(rl_lock_acquire(wb, 1, 10000, 0, NULL, NULL, err));
    snprintf(field, sizeof field, "%s:1:write", rl_client_id(b));
    CHECK_INT(raw_int(g_raw, "HGET doc %s", field), 1);
    CHECK_STATUS(try_acquire(ra, 1, 10000, err), RL_NOT_ACQUIRED);
    int64_t count = 0;
    CHECK_OK(rl_lock_hold_count(wb, 1, &count, err));
    CHECK_INT(count, 1);
    CHECK_OK(rl_lock_release(wb, 1, err));
    rl_lock_free(ra);
    rl_lock_free(rb);
    rl_lock_free(wb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(writer_may_downgrade_and_keeps_reading_after_write_release) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *w = new_kind(a, RL_LOCK_WRITE, "dg"), *r = new_kind(a, RL_LOCK_READ, "dg"),
            *rb = new_kind(b, RL_LOCK_READ, "dg");
    CHECK_OK(rl_lock_acquire(w, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(r, 1, 10000, 0, NULL, NULL, err));   /* downgrade */
    CHECK_STATUS(try_acquire(r, 2, 10000, err), RL_NOT_ACQUIRED); /* another context: no */
    CHECK_OK(rl_lock_release(w, 1, err));
    redisReply *mode = raw(g_raw, "HGET dg mode");
    CHECK(strcmp(mode->str, "read") == 0);
    freeReplyObject(mode);
    CHECK_OK(rl_lock_acquire(rb, 1, 10000, 0, NULL, NULL, err)); /* now shared */
    CHECK_OK(rl_lock_release(r, 1, err));
    CHECK_OK(rl_lock_release(rb, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS dg"), 0);
    rl_lock_free(w);
    rl_lock_free(r);
    rl_lock_free(rb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(each_read_hold_expires_on_its_own_lease) {
    rl_client *a = new_client(g_server.url, 0);
    rl_lock *r = new_kind(a, RL_LOCK_READ, "leases");
    CHECK_OK(rl_lock_acquire(r, 1, 400, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(r, 2, 5000, 0, NULL, NULL, err));
    CHECK(raw_int(g_raw, "PTTL leases") > 4000); /* the hash keeps the longest lease */
    sleep_ms(600);
    CHECK_INT(raw_int(g_raw, "EXISTS leases"), 1);
    char field[80];
    snprintf(field, sizeof field, "%s:1", rl_client_id(a));
    CHECK_INT(raw_int(g_raw, "EXISTS {leases}:%s:rwlock_timeout:1", field), 0);
    CHECK_STATUS(rl_lock_release(r, 1, err), RL_OK); /* the field is still there */
    CHECK_OK(rl_lock_release(r, 2, err));
    CHECK_INT(raw_int(g_raw, "EXISTS leases"), 0);
    rl_lock_free(r);
    rl_client_free(a);
}

TEST(watchdog_renews_only_its_own_read_holds) {
    rl_client *a = new_client(g_server.url, 600), *b = new_client(g_server.url, 0);
    rl_lock *ra = new_kind(a, RL_LOCK_READ, "shared"), *rb = new_kind(b, RL_LOCK_READ, "shared");
    CHECK_OK(rl_lock_acquire(ra, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(rb, 1, 500, 0, NULL, NULL, err)); /* fixed lease */
    char field_b[80];
    snprintf(field_b, sizeof field_b, "%s:1", rl_client_id(b));
    sleep_ms(1900); /* three watchdog timeouts of a */
    CHECK_INT(raw_int(g_raw, "EXISTS {shared}:%s:rwlock_timeout:1", field_b), 0);
    CHECK_INT(rl_lock_lost(ra, 1, NULL), 0);
    int locked = 0;
    CHECK_OK(rl_lock_is_locked(ra, &locked, err));
    CHECK_INT(locked, 1);
    CHECK_OK(rl_lock_release(ra, 1, err));
    CHECK_STATUS(rl_lock_release(rb, 1, err), RL_LOST); /* b's hold ended with its lease */
    rl_lock_free(ra);
    rl_lock_free(rb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(watchdog_renews_every_kind) {
    rl_client *c = new_client(g_server.url, 600);
    rl_lock *ls[4] = {new_kind(c, RL_LOCK_FENCED, "k1"), new_kind(c, RL_LOCK_FAIR, "k2"),
                      new_kind(c, RL_LOCK_WRITE, "k3"), new_kind(c, RL_LOCK_READ, "k4")};
    for (int i = 0; i < 4; i++)
        CHECK_OK(rl_lock_acquire(ls[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(2000);
    const char *names[4] = {"k1", "k2", "k3", "k4"};
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(raw_int(g_raw, "PTTL %s", names[i]) > 0, "%s expired", names[i]);
        CHECK_INT(rl_lock_lost(ls[i], 1, NULL), 0);
        CHECK_OK(rl_lock_release(ls[i], 1, err));
        CHECK_INT(raw_int(g_raw, "EXISTS %s", names[i]), 0);
        rl_lock_free(ls[i]);
    }
    rl_client_free(c);
}

TEST(write_release_wakes_every_reader) {
    rl_client *w = new_client(g_server.url, 0);
    rl_lock *lw = new_kind(w, RL_LOCK_WRITE, "news");
    CHECK_OK(rl_lock_acquire(lw, 1, 20000, 0, NULL, NULL, err));
    crowd readers;
    crowd_start(&readers, 5, RL_LOCK_READ, "news", 10000, 50, 0);
    sleep_ms(300);
    int64_t at = now_ms();
    CHECK_OK(rl_lock_release(lw, 1, err));
    crowd_end(&readers);
    for (int i = 0; i < 5; i++) {
        CHECK_INT(readers.ws[i].status, RL_OK);
        CHECK_MSG(readers.ws[i].acquired_at - at < 1000, "reader %d in after %lld ms", i,
                  (long long)(readers.ws[i].acquired_at - at));
    }
    rl_lock_free(lw);
    rl_client_free(w);
}

TEST(force_unlock_of_one_side_leaves_the_other_mode_alone) {
    rl_client *a = new_client(g_server.url, 0);
    rl_lock *r = new_kind(a, RL_LOCK_READ, "sides"), *w = new_kind(a, RL_LOCK_WRITE, "sides");
    CHECK_OK(rl_lock_acquire(r, 1, 10000, 0, NULL, NULL, err));
    int deleted = -1;
    CHECK_OK(rl_lock_force_unlock(w, &deleted, err));
    CHECK_INT(deleted, 0);
    CHECK_INT(raw_int(g_raw, "EXISTS sides"), 1);
    CHECK_OK(rl_lock_force_unlock(r, &deleted, err));
    CHECK_INT(deleted, 1);
    CHECK_INT(raw_int(g_raw, "EXISTS sides"), 0);
    CHECK_STATUS(rl_lock_release(r, 1, err), RL_LOST);
    rl_lock_free(r);
    rl_lock_free(w);
    rl_client_free(a);
}

TEST(kinds_refuse_keys_of_other_types) {
    rl_client *a = new_client(g_server.url, 0);
    freeReplyObject(raw(g_raw, "SET plain value"));
    rl_lock_kind kinds[4] = {RL_LOCK_FENCED, RL_LOCK_FAIR, RL_LOCK_READ, RL_LOCK_WRITE};
    for (int i = 0; i < 4; i++) {
        rl_lock *l = new_kind(a, kinds[i], "plain");
        CHECK_STATUS(try_acquire(l, 1, 1000, err), RL_ERR_SERVER);
        CHECK_STATUS(rl_lock_force_unlock(l, NULL, err), RL_ERR_SERVER);
        rl_lock_free(l);
    }
    redisReply *r = raw(g_raw, "GET plain");
    CHECK(r->type == REDIS_REPLY_STRING && strcmp(r->str, "value") == 0);
    freeReplyObject(r);
    rl_lock *l = NULL;
    CHECK_STATUS(rl_lock_new_kind(a, (rl_lock_kind)9, "x", 1, &l, err), RL_ERR_ARGUMENT);
    CHECK(l == NULL);
    rl_client_free(a);
}

static int64_t abort_at;
static int abort_after(void *unused) {
    (void)unused;
    return now_ms() >= abort_at;
}

TEST_SOLO(fair_head_that_gives_up_on_a_free_lock_wakes_the_next_waiter) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0),
              *c = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FAIR, "relay"), *lb = new_kind(b, RL_LOCK_FAIR, "relay"),
            *lc = new_kind(c, RL_LOCK_FAIR, "relay");
    CHECK_OK(rl_lock_acquire(la, 1, 20000, 0, NULL, NULL, err));
    waiter wb = {.lock = lb, .context = 1, .wait_ms = RL_WAIT_FOREVER, .hook = abort_after},
           wc = {.lock = lc, .context = 1, .wait_ms = 8000, .hold_ms = 50};
    pthread_t tb, tc;
    int64_t start = now_ms();
    abort_at = start + 1000; /* b is interrupted (as by Ctrl-C) while first in line */
    pthread_create(&tb, NULL, waiter_main, &wb);
    sleep_ms(150);
    pthread_create(&tc, NULL, waiter_main, &wc);
    sleep_ms(150);
    /* The lock goes away without a word (as by expiry): nobody is woken, b then gives up. */
    freeReplyObject(raw(g_raw, "DEL relay"));
    pthread_join(tb, NULL);
    pthread_join(tc, NULL);
    CHECK_INT(wb.status, RL_ABORTED);
    CHECK_INT(wc.status, RL_OK);
    CHECK_MSG(wc.acquired_at - start < 1000 + 1000, "c got in after %lld ms",
              (long long)(wc.acquired_at - start));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_lock_free(lc);
    rl_client_free(a);
    rl_client_free(b);
    rl_client_free(c);
}

TEST(fenced_acquire_is_refused_when_the_holder_has_no_ttl) {
    /* The refusal then reads {-1, -1}: the same first element as a success. */
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_kind(c, RL_LOCK_FENCED, "persisted");
    freeReplyObject(raw(g_raw, "HSET persisted someone-else:1 1"));
    CHECK_STATUS(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_INT(rl_lock_token(l, 1), 0);
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    rl_lock_free(l);
    rl_client_free(c);
}
