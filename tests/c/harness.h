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
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the running test skipped, with the reason printed beside it. */
void test_skip(const char *reason);

#define TEST(name)                                                                                 \
    static void name(void);                                                                        \
    __attribute__((constructor)) static void register_##name(void) {                               \
        test_register(#name, name);                                                                \
    }                                                                                              \
    static void name(void)

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
} test_server;

/* Starts redis-server (no persistence) on a free loopback port and a unix socket; extra args
 * (NULL-terminated) are passed on. Dies with the test process. 0 on success. */
int server_start(test_server *s, const char *const *extra_args);
void server_stop(test_server *s);

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

/* The core's events, as a test sees them: counts per kind, the latest lost reason and message. */
typedef struct event_log {
    pthread_mutex_t mu;
    int counts[8]; /* by rl_event_kind */
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
