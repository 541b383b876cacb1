/* The permit-expirable semaphore (Redisson's RPermitExpirableSemaphore): its layout, permits
 * that come back by themselves, waits woken by an expiry, lease updates, the watchdog's renewal
 * of permits in the same rounds as locks, and bad input. */
#include <stdlib.h>
#include <string.h>

#include "family_kit.h"

/* The permit's 16 raw bytes, as the ZSET holds them. */
static void raw_id(const char *hex, unsigned char out[16]) {
    for (int i = 0; i < 16; i++) {
        char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
        out[i] = (unsigned char)strtoul(byte, NULL, 16);
    }
}

static long long permit_date(const char *zset, const char *id) {
    unsigned char bytes[16];
    raw_id(id, bytes);
    redisReply *r = raw(g_raw, "ZSCORE %s %b", zset, bytes, (size_t)16);
    long long date = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return date;
}

TEST(expirable_permits_in_redissons_layout) {
    rl_client *c = new_client(g_server.url, 0);
    rl_expirable *s = new_expirable(c, "workers");
    int set = -1;
    CHECK_OK(rl_expirable_try_set_permits(s, 2, &set, err));
    CHECK_INT(set, 1);
    CHECK_INT(raw_int(g_raw, "GET workers"), 2);
    char id[RL_PERMIT_ID_LEN + 1] = "";
    long long before = redis_epoch_ms();
    CHECK_OK(rl_expirable_acquire(s, 5000, 0, NULL, NULL, id, err));
    long long after = redis_epoch_ms();
    CHECK_INT(strlen(id), 32);
    CHECK(strspn(id, "0123456789abcdef") == 32);
    CHECK_INT(raw_int(g_raw, "GET workers"), 1);
    /* suffix(name, "timeout"): the permit's raw bytes scored with its expiry, epoch ms */
    long long date = permit_date("{workers}:timeout", id);
    CHECK_MSG(date >= before + 5000 && date <= after + 5000, "date %lld, now %lld", date, after);
    int64_t n = -1;
    CHECK_OK(rl_expirable_available(s, &n, err));
    CHECK_INT(n, 1);
    CHECK_OK(rl_expirable_release(s, id, err));
    CHECK_INT(raw_int(g_raw, "GET workers"), 2);
    CHECK_INT(raw_int(g_raw, "ZCARD {workers}:timeout"), 0);
    rl_error e;
    CHECK(rl_expirable_release(s, id, &e) == RL_NOT_OWNED); /* released already */
    CHECK_MSG(strstr(e.message, id) != NULL, "%s", e.message);
    CHECK_OK(rl_expirable_add_permits(s, 3, err));
    CHECK_INT(raw_int(g_raw, "GET workers"), 5);
    CHECK_OK(rl_expirable_add_permits(s, -4, err));
    CHECK_INT(raw_int(g_raw, "GET workers"), 1);
    rl_expirable *tagged = new_expirable(c, "{t}w");
    CHECK_OK(rl_expirable_try_set_permits(tagged, 1, NULL, err));
    CHECK_OK(rl_expirable_acquire(tagged, 5000, 0, NULL, NULL, id, err));
    CHECK(permit_date("{t}w:timeout", id) > 0); /* a name with a tag keeps it */
    CHECK_OK(rl_expirable_release(tagged, id, err));
    rl_expirable_free(tagged);
    rl_expirable_free(s);
    rl_client_free(c);
}

TEST(expirable_permit_comes_back_by_itself) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_expirable *sa = new_expirable(a, "crash"), *sb = new_expirable(b, "crash");
    CHECK_OK(rl_expirable_try_set_permits(sa, 1, NULL, err));
    char lost_id[RL_PERMIT_ID_LEN + 1], id[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_expirable_acquire(sa, 400, 0, NULL, NULL, lost_id, err)); /* a worker "crashes" */
    CHECK_STATUS(rl_expirable_acquire(sb, 5000, 0, NULL, NULL, id, err), RL_NOT_ACQUIRED);
    int64_t t0 = now_ms();
    /* Nobody publishes an expiry: the waiter looks again when the first permit's date passes. */
    CHECK_OK(rl_expirable_acquire(sb, 5000, 5000, NULL, NULL, id, err));
    int64_t waited = now_ms() - t0;
    CHECK_MSG(waited >= 250 && waited < 2500, "waited %lld ms for a 400 ms lease",
              (long long)waited);
    CHECK(strcmp(id, lost_id) != 0);
    rl_error e;
    CHECK(rl_expirable_release(sa, lost_id, &e) == RL_NOT_OWNED); /* taken back already */
    CHECK_OK(rl_expirable_release(sb, id, err));
    CHECK_INT(raw_int(g_raw, "GET crash"), 1);
    rl_expirable_free(sa);
    rl_expirable_free(sb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(expirable_release_after_the_lease_answers_lost) {
    rl_client *c = new_client(g_server.url, 0);
    rl_expirable *s = new_expirable(c, "late");
    CHECK_OK(rl_expirable_try_set_permits(s, 1, NULL, err));
    char id[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_expirable_acquire(s, 100, 0, NULL, NULL, id, err));
    sleep_ms(250);
    rl_error e;
    CHECK(rl_expirable_release(s, id, &e) == RL_LOST); /* expired, not yet taken back */
    CHECK_INT(e.lost_reason, RL_LOST_EXPIRED);
    CHECK_INT(raw_int(g_raw, "GET late"), 1); /* it is back in the pool */
    rl_expirable_free(s);
    rl_client_free(c);
}

TEST(expirable_update_lease_keeps_a_permit) {
    rl_client *c = new_client(g_server.url, 0);
    rl_expirable *s = new_expirable(c, "longer");
    CHECK_OK(rl_expirable_try_set_permits(s, 1, NULL, err));
    char id[RL_PERMIT_ID_LEN + 1], other[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_expirable_acquire(s, 300, 0, NULL, NULL, id, err));
    CHECK_OK(rl_expirable_update_lease(s, id, 10000, err));
    long long date = permit_date("{longer}:timeout", id);
    CHECK_MSG(date > redis_epoch_ms() + 9000, "date %lld", date);
    sleep_ms(500);
    CHECK_STATUS(rl_expirable_acquire(s, 300, 0, NULL, NULL, other, err), RL_NOT_ACQUIRED);
    CHECK_OK(rl_expirable_release(s, id, err));
    CHECK_STATUS(rl_expirable_update_lease(s, id, 1000, err), RL_NOT_OWNED);
    rl_expirable_free(s);
    rl_client_free(c);
}

TEST(expirable_watchdog_renews_permits_with_the_locks) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 600, 0, &log);
    rl_expirable *s = new_expirable(c, "renewed");
    rl_lock *l = new_lock(c, "renewed-lock");
    CHECK_OK(rl_expirable_try_set_permits(s, 2, NULL, err));
    char id[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_expirable_acquire(s, RL_LEASE_WATCHDOG, 0, NULL, NULL, id, err));
    long long first = permit_date("{renewed}:timeout", id);
    sleep_ms(1500); /* more than two watchdog timeouts: alive only if renewed */
    long long later = permit_date("{renewed}:timeout", id);
    CHECK_MSG(later > first + 500, "date %lld, first %lld", later, first);
    rl_stats st;
    rl_client_stats(c, &st);
    CHECK_INT(st.last_round_holds, 2); /* the lock and the permit, in one round */
    CHECK_MSG(st.renew_round_trips <= st.renew_rounds + 1, "%llu round trips for %llu rounds",
              (unsigned long long)st.renew_round_trips, (unsigned long long)st.renew_rounds);
    CHECK(!rl_expirable_lost(s, id, NULL));
    CHECK_OK(rl_expirable_release(s, id, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "GET renewed"), 2);
    CHECK_INT(event_count(&log, RL_EVENT_LOST), 0);
    rl_lock_free(l);
    rl_expirable_free(s);
    rl_client_free(c);
    event_log_destroy(&log);
}

TEST(expirable_renewed_permit_taken_away_is_reported_lost) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 600, 0, &log);
    rl_expirable *s = new_expirable(c, "taken");
    CHECK_OK(rl_expirable_try_set_permits(s, 1, NULL, err));
    char id[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_expirable_acquire(s, RL_LEASE_WATCHDOG, 0, NULL, NULL, id, err));
    unsigned char bytes[16];
    raw_id(id, bytes);
    freeReplyObject(raw(g_raw, "ZREM {taken}:timeout %b", bytes, (size_t)16));
    rl_lost_reason reason = RL_LOST_NONE;
    CHECK_SOON(rl_expirable_lost(s, id, &reason), 2000);
    CHECK_INT(reason, RL_LOST_DELETED);
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 2000);
    rl_error e;
    CHECK(rl_expirable_release(s, id, &e) == RL_LOST);
    CHECK_INT(e.lost_reason, RL_LOST_DELETED);
    CHECK(!rl_expirable_lost(s, id, NULL)); /* released: forgotten */
    rl_expirable_free(s);
    rl_client_free(c);
    event_log_destroy(&log);
}

TEST(expirable_bad_input_is_refused) {
    rl_client *c = new_client(g_server.url, 0);
    rl_expirable *s = new_expirable(c, "badperm");
    char id[RL_PERMIT_ID_LEN + 1];
    CHECK_STATUS(rl_expirable_try_set_permits(s, -3, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_acquire(s, 0, 0, NULL, NULL, id, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_acquire(s, -7, 0, NULL, NULL, id, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_acquire(s, 1000, 0, NULL, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_release(s, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_release(s, "abc", err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_release(s, "zz000000000000000000000000000000", err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_release(s, "00000000000000000000000000000000ff", err),
                 RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_expirable_update_lease(s, "00000000000000000000000000000000", 0, err),
                 RL_ERR_ARGUMENT);
    /* A well-formed id nobody holds. */
    CHECK_STATUS(rl_expirable_release(s, "00000000000000000000000000000000", err), RL_NOT_OWNED);
    CHECK_STATUS(rl_expirable_update_lease(s, "0123456789ABCDEF0123456789abcdef", 100, err),
                 RL_NOT_OWNED);
    CHECK_INT(raw_int(g_raw, "GET badperm"), -999); /* nil: a release of nothing adds nothing */
    rl_expirable_free(s);
    rl_client_free(c);
}
