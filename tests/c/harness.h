/* A small test runner for the core: TEST(name) registers a test, CHECK* fail it with the file and
 * line; the run ends with "N passed, N failed". Also throwaway redis-servers for tests. */
#ifndef RL_TEST_HARNESS_H
#define RL_TEST_HARNESS_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "redlease.h"

typedef void (*test_fn)(void);
/* solo: the test counts how often one thread wins a race, which a busy machine sways; in a
 * parallel run (test_core -j N) it runs after the others, alone. */
void test_register(const char *name, test_fn fn, int solo);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the running test skipped, with the reason printed beside it. */
void test_skip(const char *reason);

#define TEST_REGISTERED(name, solo)                                                                \
    static void name(void);                                                                        \
    __attribute__((constructor)) static void register_##name(void) {                               \
        test_register(#name, name, solo);                                                          \
    }                                                                                              \
    static void name(void)
#define TEST(name) TEST_REGISTERED(name, 0)
#define TEST_SOLO(name) TEST_REGISTERED(name, 1)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_fail(__FILE__, __LINE__, "%s", #cond);                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Expects status `want` from the call; prints the error message otherwise. */
#define CHECK_STATUS(call, want)                                                                   \
    do {                                                                                           \
        rl_error e_ = {0};                                                                         \
        rl_error *err = &e_;                                                                       \
        rl_status s_ = (call);                                                                     \
        if (s_ != (want)) {                                                                        \
            test_fail(__FILE__, __LINE__, "%s -> %s (want %s): %s", #call, rl_status_name(s_),     \
                      rl_status_name(want), e_.message);                                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define CHECK_OK(call) CHECK_STATUS(call, RL_OK)

/* `cond` must hold within `ms` (polled every 10 ms): for what happens shortly after a call, such
 * as the server confirming an UNSUBSCRIBE. */
#define CHECK_SOON(cond, ms)                                                                       \
    do {                                                                                           \
        int64_t until_ = now_ms() + (ms);                                                          \
        while (!(cond) && now_ms() < until_)                                                       \
            sleep_ms(10);                                                                          \
        CHECK(cond);                                                                               \
    } while (0)

typedef struct test_server {
    int port;
    pid_t pid;
    char dir[64];
    char url[96];    /* redis://127.0.0.1:port */
    char socket[96]; /* unix socket path */
    int tls_port;    /* tls_server_start: the TLS port, and its URL rediss://127.0.0.1:tls_port */
    char tls_url[96];
    const char
        *binary; /* the server program: "redis-server" from PATH unless server_start_binary */
} test_server;

/* Starts redis-server (no persistence) on a free loopback port and a unix socket; extra args
 * (NULL-terminated) are passed on. Dies with the test process. 0 on success. */
int server_start(test_server *s, const char *const *extra_args);
/* The same with another server program (a path), kept across server_restart. */
int server_start_binary(test_server *s, const char *binary, const char *const *extra_args);
/* Valkey's server program for the tests that need a newer server than Debian's (WAITAOF): the
 * path in REDLEASE_VALKEY_SERVER (the make targets set it from scripts/fetch-servers), or NULL. */
const char *valkey_server(void);
void server_stop(test_server *s);
/* Kills s's server and starts a new one on the same port and folder: with the data as a SAVE
 * just before left it (keep_data), or with none. A new process: a new replication id. */
int server_restart(test_server *s, int keep_data);
int free_port(void);

/* The certificates of tests/tls/make-certs, made once per run; the directory. */
const char *test_certs(void);
/* A server that also listens with TLS (server.crt of test_certs, or `cert` instead: "rogue"),
 * asking clients for a certificate when require_client_cert is set. 0 on success. */
int tls_server_start(test_server *s, const char *cert, int require_client_cert);

/* A raw hiredis connection to look at what the core wrote. */
redisContext *server_connect(const test_server *s);
/* Runs a command on a raw connection; aborts the test run if the connection fails. */
redisReply *raw(redisContext *c, const char *fmt, ...);
long long raw_int(redisContext *c, const char *fmt, ...);
/* Keys on the shared server other than unlock latches (a latch lives until the next call on the
 * connection that released, or its TTL). */
long long lock_keys(void);

/* The run's shared server, flushed before every test. */
extern test_server g_server;
extern redisContext *g_raw;

rl_client *new_client(const char *url, int64_t watchdog_ms);
/* A lock of `kind` on `name` (a C string); exits the run when it cannot be made. */
rl_lock *new_kind(rl_client *c, rl_lock_kind kind, const char *name);
rl_lock *new_lock(rl_client *c, const char *name); /* the reentrant kind */

/* An acquire on a thread of its own (pthread_create(&t, NULL, waiter_main, &w)): what it got,
 * when, and in what order among waiters (waiter_order_reset starts the count again). */
typedef struct waiter {
    rl_lock *lock;
    uint64_t context;
    int64_t wait_ms;
    int64_t lease_ms; /* 0: 10 s */
    int64_t hold_ms;  /* > 0: once acquired, hold this long, then release; 0: keep holding */
    rl_wait_hook hook;
    void *hook_userdata;
    rl_status status;
    int64_t acquired_at;
    int order;
} waiter;
void *waiter_main(void *waiter_arg);
void waiter_order_reset(void);

/* Up to CROWD_MAX waiters on `name`, each on a client of its own (context 1), each started
 * `stagger_ms` after the one before; crowd_end joins them and frees their locks and clients. */
#define CROWD_MAX 8
typedef struct crowd {
    int n;
    rl_client *clients[CROWD_MAX];
    rl_lock *locks[CROWD_MAX];
    waiter ws[CROWD_MAX];
    pthread_t threads[CROWD_MAX];
} crowd;
void crowd_start(crowd *c, int n, rl_lock_kind kind, const char *name, int64_t wait_ms,
                 int64_t hold_ms, int64_t stagger_ms);
void crowd_end(crowd *c);

/* The core's events, as a test sees them: counts per kind, the latest lost reason and message. */
typedef struct event_log {
    pthread_mutex_t mu;
#define EVENT_KINDS 16
    int counts[EVENT_KINDS];       /* by rl_event_kind */
    int64_t first_at[EVENT_KINDS]; /* now_ms() when the first and the latest event of each kind */
    int64_t last_at[EVENT_KINDS];  /* arrived (0: none yet) */
    rl_lost_reason reason;
    int64_t last_lost_at; /* now_ms() when the latest RL_EVENT_LOST arrived */
    char message[400];
} event_log;
void event_log_init(event_log *log);
void event_log_destroy(event_log *log);
int event_count(event_log *log, rl_event_kind kind);
/* A client with these timeouts (0: the default) whose events go to log (may be NULL). */
rl_client *client_with(const char *url, int64_t watchdog_ms, int64_t command_ms, event_log *log);

/* Stalls the shared server for `ms` (DEBUG SLEEP, sent on a connection of its own); stall_end
 * waits until it answers again. */
redisContext *stall_start(int64_t ms);
void stall_end(redisContext *c);
int64_t now_ms(void);
void sleep_ms(int64_t ms);

#endif
