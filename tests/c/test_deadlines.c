/* connect_timeout and command_timeout are deadlines for a whole call, not for each read: a peer
 * that trickles a byte every 300 ms (tests/c/trickle.c) is cut off within the timeout, on every
 * path (connect and TLS handshake, AUTH/SELECT, a command's reply, asking a sentinel); and
 * closing the client still cuts such a call short at once. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "trickle.h"

#define TIMEOUT_MS 1000
#define BOUND_MS 3000    /* generous: the deadline plus a loaded machine */
#define TRICKLE_BYTES 30 /* 9 s of bytes: what a call waited before deadlines */

/* One round trip of a client of `url` with both timeouts at TIMEOUT_MS; its status and time. */
static rl_status one_call(const char *url, const rl_options *base, int64_t *took, rl_error *e) {
    rl_options o;
    if (base)
        o = *base;
    else
        rl_options_init(&o);
    o.connect_timeout_ms = o.command_timeout_ms = TIMEOUT_MS;
    rl_client *c;
    rl_status st = rl_client_new(url, &o, &c, e);
    if (st != RL_OK) return st;
    rl_lock *l = new_lock(c, "trickled");
    int locked;
    int64_t started = now_ms();
    st = rl_lock_is_locked(l, &locked, e);
    *took = now_ms() - started;
    rl_lock_free(l);
    rl_client_free(c);
    return st;
}

TEST(deadline_cuts_a_trickled_reply_and_a_trickled_auth) {
    trickle t;
    CHECK(trickle_start(&t, "+", 1, 'O', TRICKLE_BYTES) == 0); /* "+OOOO..." never ends */
    const char *forms[] = {"redis://127.0.0.1:%d", "redis://:secret@127.0.0.1:%d/2"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char url[96];
        snprintf(url, sizeof url, forms[i], t.port);
        int64_t took;
        rl_error e;
        rl_status st = one_call(url, NULL, &took, &e);
        CHECK_MSG(st == RL_ERR_CONNECTION && took < BOUND_MS, "%s: %s after %lld ms: %s", url,
                  rl_status_name(st), (long long)took, e.message);
        CHECK_MSG(strstr(e.message, "timed out"), "%s: %s", url, e.message);
    }
    trickle_stop(&t);
}

TEST(deadline_cuts_a_trickled_tls_handshake) {
    if (!rl_tls_supported()) {
        test_skip("this build has no TLS (make TLS=0)");
        return;
    }
    /* A handshake record announcing 4096 bytes, which come one at a time. */
    trickle t;
    CHECK(trickle_start(&t, "\x16\x03\x03\x10\x00", 5, '\0', TRICKLE_BYTES) == 0);
    char url[96], ca[128];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", t.port);
    snprintf(ca, sizeof ca, "%s/ca.crt", test_certs());
    rl_options o;
    rl_options_init(&o);
    o.tls_ca_file = ca;
    int64_t took;
    rl_error e;
    rl_status st = one_call(url, &o, &took, &e);
    CHECK_MSG(st == RL_ERR_CONNECTION && took < BOUND_MS, "%s after %lld ms: %s",
              rl_status_name(st), (long long)took, e.message);
    CHECK_MSG(strstr(e.message, "timed out"), "%s", e.message);
    trickle_stop(&t);
}

TEST(deadline_cuts_a_trickled_sentinel) {
    trickle t;
    const char *answer = "*2\r\n$9\r\n127.0.0.1\r\n$1000\r\n"; /* then a port of 1000 digits */
    CHECK(trickle_start(&t, answer, strlen(answer), '6', TRICKLE_BYTES) == 0);
    char url[96];
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d/mymaster", t.port);
    int64_t took;
    rl_error e;
    rl_status st = one_call(url, NULL, &took, &e);
    CHECK_MSG(st == RL_ERR_CONNECTION && took < BOUND_MS, "%s after %lld ms: %s",
              rl_status_name(st), (long long)took, e.message);
    trickle_stop(&t);
}

typedef struct trickled_call {
    rl_lock *lock;
    rl_status status;
    int64_t returned_at;
} trickled_call;

static void *call_trickled(void *arg) {
    trickled_call *call = arg;
    int locked;
    call->status = rl_lock_is_locked(call->lock, &locked, NULL);
    call->returned_at = now_ms();
    return NULL;
}

TEST(close_cuts_a_trickled_call_short) {
    trickle t;
    CHECK(trickle_start(&t, "+", 1, 'O', TRICKLE_BYTES) == 0);
    char url[96];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", t.port);
    rl_client *c = client_with(url, 0, 20000, NULL); /* the deadline is far */
    rl_lock *l = new_lock(c, "trickled");
    trickled_call call = {.lock = l};
    pthread_t thread;
    pthread_create(&thread, NULL, call_trickled, &call);
    sleep_ms(700); /* the call is reading the trickle */
    int64_t closed_at = now_ms();
    rl_client_free(c);
    pthread_join(thread, NULL);
    CHECK_INT(call.status, RL_ERR_CLOSED);
    CHECK_MSG(call.returned_at - closed_at < 500, "returned %lld ms after close",
              (long long)(call.returned_at - closed_at));
    rl_lock_free(l);
    trickle_stop(&t);
}
