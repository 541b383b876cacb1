#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024
#define MAX_WORKERS 16

typedef struct test_entry {
    const char *name;
    test_fn fn;
    int solo;
} test_entry;
static test_entry tests[MAX_TESTS];
static int ntests;
static int current_failed;
static const char *current_skip;
static const char *current_name; /* named in failure lines: parallel workers interleave */

test_server g_server;
redisContext *g_raw;

void test_register(const char *name, test_fn fn, int solo) {
    if (ntests == MAX_TESTS) { /* never drop a test in silence */
        fprintf(stderr, "harness: more than %d tests; raise MAX_TESTS\n", MAX_TESTS);
        exit(2);
    }
    tests[ntests++] = (test_entry){name, fn, solo};
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "    FAIL %s %s:%d: ", current_name ? current_name : "", file, line);
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    fflush(stdout);
    current_failed = 1;
}

void test_skip(const char *reason) {
    current_skip = reason;
}

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* Asked on the server's own unix socket, which it opens after its TCP port: an answer there is
 * from this server, never from another run's server that took the same port first. */
static int answers_ping(const test_server *s) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectUnixWithTimeout(s->socket, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r != NULL; /* PONG, or NOAUTH from a server with a password */
        if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return ok;
}

/* Starts redis-server on s->port in s->dir; 0 once it answers. */
static int spawn(test_server *s, const char *const *extra) {
    {
        char port[16];
        snprintf(port, sizeof port, "%d", s->port);
        const char *program = s->binary ? s->binary : "redis-server";
        const char *argv[64] = {"redis-server",
                                "--port",
                                port,
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--dir",
                                s->dir,
                                "--unixsocket",
                                s->socket,
                                "--unixsocketperm",
                                "700"};
        argv[0] = program;
        int n = 15;
        for (int i = 0; extra && extra[i] && n < 63; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test run */
            char log[128];
            snprintf(log, sizeof log, "%s/redis.log", s->dir);
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
            if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
            execvp(program, (char *const *)argv);
            _exit(127);
        }
        s->pid = pid;
        for (int wait = 0; wait < 100; wait++) {
            if (answers_ping(s)) {
                snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
                return 0;
            }
            int status;
            if (waitpid(pid, &status, WNOHANG) == pid) break; /* port taken */
            sleep_ms(50);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return -1;
}

int server_start(test_server *s, const char *const *extra) {
    return server_start_binary(s, NULL, extra);
}

const char *valkey_server(void) {
    const char *path = getenv("REDLEASE_VALKEY_SERVER");
    return path && path[0] && access(path, X_OK) == 0 ? path : NULL;
}

int server_start_binary(test_server *s, const char *binary, const char *const *extra) {
    memset(s, 0, sizeof *s);
    s->binary = binary;
    snprintf(s->dir, sizeof s->dir, "/tmp/rltest.XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    snprintf(s->socket, sizeof s->socket, "%s/redis.sock", s->dir);
    for (int attempt = 0; attempt < 20; attempt++) {
        s->port = free_port();
        if (s->port > 0 && spawn(s, extra) == 0) return 0; /* else the port was taken */
    }
    return -1;
}

int server_restart(test_server *s, int keep_data) {
    redisContext *c = server_connect(s);
    redisReply *r = keep_data ? redisCommand(c, "SAVE") : NULL;
    int saved = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    redisFree(c);
    if (keep_data && !saved) return -1;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    char dump[128];
    snprintf(dump, sizeof dump, "%s/dump.rdb", s->dir);
    if (!keep_data) unlink(dump);
    return spawn(s, NULL);
}

const char *test_certs(void) {
    static char dir[64];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "/tmp/rlcerts.XXXXXX");
    char cmd[160];
    if (!mkdtemp(dir)) exit(2);
    snprintf(cmd, sizeof cmd, "tests/tls/make-certs '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "tests/tls/make-certs failed\n");
        exit(2);
    }
    return dir;
}

int tls_server_start(test_server *s, const char *cert, int require_client_cert) {
    const char *dir = test_certs();
    char port[16], cert_file[128], key_file[128], ca_file[128];
    int tls_port = free_port();
    snprintf(port, sizeof port, "%d", tls_port);
    snprintf(cert_file, sizeof cert_file, "%s/%s.crt", dir, cert ? cert : "server");
    snprintf(key_file, sizeof key_file, "%s/%s.key", dir, cert ? cert : "server");
    snprintf(ca_file, sizeof ca_file, "%s/ca.crt", dir);
    const char *args[] = {"--tls-port",
                          port,
                          "--tls-cert-file",
                          cert_file,
                          "--tls-key-file",
                          key_file,
                          "--tls-ca-cert-file",
                          ca_file,
                          "--tls-auth-clients",
                          require_client_cert ? "yes" : "no",
                          NULL};
    if (server_start(s, args) != 0) return -1;
    s->tls_port = tls_port;
    snprintf(s->tls_url, sizeof s->tls_url, "rediss://127.0.0.1:%d", tls_port);
    return 0;
}

void server_stop(test_server *s) {
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    if (s->dir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", s->dir);
}

redisContext *server_connect(const test_server *s) {
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    if (!c || c->err) {
        fprintf(stderr, "cannot connect to the test server\n");
        exit(2);
    }
    return c;
}

static redisReply *vraw(redisContext *c, const char *fmt, va_list ap) {
    redisReply *r = redisvCommand(c, fmt, ap);
    if (!r) {
        fprintf(stderr, "raw command \"%s\" failed: %s\n", fmt, c->errstr);
        exit(2);
    }
    return r;
}

redisReply *raw(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vraw(c, fmt, ap);
    va_end(ap);
    return r;
}

long long raw_int(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vraw(c, fmt, ap);
    va_end(ap);
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                  : -999;
    freeReplyObject(r);
    return v;
}

rl_client *new_client(const char *url, int64_t watchdog_ms) {
    return client_with(url, watchdog_ms, 0, NULL);
}

void event_log_init(event_log *log) {
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
}

void event_log_destroy(event_log *log) {
    pthread_mutex_destroy(&log->mu);
}

static void record_event(const rl_event *ev, void *userdata) {
    event_log *log = userdata;
    pthread_mutex_lock(&log->mu);
    if ((int)ev->kind >= 0 && (int)ev->kind < EVENT_KINDS) {
        log->counts[ev->kind]++;
        log->last_at[ev->kind] = now_ms();
        if (!log->first_at[ev->kind]) log->first_at[ev->kind] = log->last_at[ev->kind];
    }
    if (ev->kind == RL_EVENT_LOST) {
        log->reason = ev->reason;
        log->last_lost_at = now_ms();
    }
    snprintf(log->message, sizeof log->message, "%s", ev->message ? ev->message : "");
    pthread_mutex_unlock(&log->mu);
}

int event_count(event_log *log, rl_event_kind kind) {
    pthread_mutex_lock(&log->mu);
    int n = log->counts[kind];
    pthread_mutex_unlock(&log->mu);
    return n;
}

rl_client *client_with(const char *url, int64_t watchdog_ms, int64_t command_ms, event_log *log) {
    rl_options o;
    rl_options_init(&o);
    if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
    if (command_ms > 0) o.command_timeout_ms = o.connect_timeout_ms = command_ms;
    if (log) {
        o.on_event = record_event;
        o.event_userdata = log;
    }
    rl_client *c = NULL;
    rl_error err;
    if (rl_client_new(url, &o, &c, &err) != RL_OK) {
        fprintf(stderr, "rl_client_new(%s): %s\n", url, err.message);
        exit(2);
    }
    return c;
}

redisContext *stall_start(int64_t ms) {
    redisContext *c = server_connect(&g_server);
    redisAppendCommand(c, "DEBUG SLEEP %.3f", (double)ms / 1000.0);
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) exit(2);
    sleep_ms(50); /* asleep now: whatever is sent from here on waits */
    return c;
}

void stall_end(redisContext *c) {
    void *reply = NULL;
    if (redisGetReply(c, &reply) != REDIS_OK) exit(2);
    freeReplyObject(reply);
    redisFree(c);
}

rl_lock *new_kind(rl_client *c, rl_lock_kind kind, const char *name) {
    rl_lock *l = NULL;
    rl_error err;
    if (rl_lock_new_kind(c, kind, name, strlen(name), &l, &err) != RL_OK) {
        fprintf(stderr, "rl_lock_new_kind: %s\n", err.message);
        exit(2);
    }
    return l;
}

rl_lock *new_lock(rl_client *c, const char *name) {
    return new_kind(c, RL_LOCK_REENTRANT, name);
}

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int next_order;

void waiter_order_reset(void) {
    pthread_mutex_lock(&order_mu);
    next_order = 0;
    pthread_mutex_unlock(&order_mu);
}

void *waiter_main(void *arg) {
    waiter *w = arg;
    w->status = rl_lock_acquire(w->lock, w->context, w->lease_ms ? w->lease_ms : 10000, w->wait_ms,
                                w->hook, w->hook_userdata, NULL);
    w->acquired_at = now_ms();
    pthread_mutex_lock(&order_mu);
    w->order = ++next_order;
    pthread_mutex_unlock(&order_mu);
    if (w->status == RL_OK && w->hold_ms > 0) {
        sleep_ms(w->hold_ms); /* hold a moment, so that a wrong order would show */
        rl_lock_release(w->lock, w->context, NULL);
    }
    return NULL;
}

void crowd_start(crowd *c, int n, rl_lock_kind kind, const char *name, int64_t wait_ms,
                 int64_t hold_ms, int64_t stagger_ms) {
    c->n = n < CROWD_MAX ? n : CROWD_MAX;
    waiter_order_reset();
    for (int i = 0; i < c->n; i++) {
        c->clients[i] = new_client(g_server.url, 0);
        c->locks[i] = new_kind(c->clients[i], kind, name);
        c->ws[i] =
            (waiter){.lock = c->locks[i], .context = 1, .wait_ms = wait_ms, .hold_ms = hold_ms};
        pthread_create(&c->threads[i], NULL, waiter_main, &c->ws[i]);
        if (stagger_ms > 0) sleep_ms(stagger_ms);
    }
}

void crowd_end(crowd *c) {
    for (int i = 0; i < c->n; i++)
        pthread_join(c->threads[i], NULL);
    for (int i = 0; i < c->n; i++) {
        rl_lock_free(c->locks[i]);
        rl_client_free(c->clients[i]);
    }
    c->n = 0;
}

/* Runs test i on this process's server; 0 passed, 1 failed, 2 skipped. */
static int run_one(int i) {
    freeReplyObject(raw(g_raw, "FLUSHALL"));
    current_failed = 0;
    current_skip = NULL;
    current_name = tests[i].name;
    int64_t t0 = now_ms();
    tests[i].fn();
    if (current_skip && !current_failed) {
        printf("skip %s: %s\n", tests[i].name, current_skip);
        return 2;
    }
    printf("%s %s (%lld ms)\n", current_failed ? "FAIL" : "ok  ", tests[i].name,
           (long long)(now_ms() - t0));
    return current_failed ? 1 : 0;
}

static int start_shared_server(void) {
    const char *shared_args[] = {"--enable-debug-command", "yes", NULL};
    if (server_start(&g_server, shared_args) != 0) {
        fprintf(stdout, "cannot start redis-server (is it installed?)\n");
        return -1;
    }
    g_raw = server_connect(&g_server);
    return 0;
}

static void stop_shared_server(void) {
    redisFree(g_raw);
    server_stop(&g_server);
}

/* Tests on a Redis Cluster all run in the first worker: its cluster (tests/c/cluster_kit.c, six
 * nodes started once per process) is then started once per run, not once per worker. */
static int on_first_worker(int i) {
    return strstr(tests[i].name, "cluster") != NULL;
}

/* What the workers of a parallel run share: the next test to take and each test's outcome. */
typedef struct shared_run {
    _Atomic int next;
    int outcome[MAX_TESTS]; /* -1 not run, else run_one's answer */
    int running[MAX_WORKERS +
                1]; /* the test each worker is in (-1 between tests); + the solo one */
} shared_run;

/* A worker: its own redis-server, then tests taken one at a time until none is left. A test
 * that needs the shared server alone (SIGSTOP, restart, DEBUG SLEEP) has it: each worker has one.
 */
static void run_in_worker(shared_run *run, int id, int i) {
    run->running[id] = i;
    run->outcome[i] = run_one(i);
    run->running[id] = -1;
    fflush(stdout);
}

/* A worker: its own redis-server, then tests taken from the list one at a time until none is
 * left. The first worker runs the Cluster tests first; solo tests are left to the solo worker. */
static void worker(shared_run *run, int id, const int *chosen, int nchosen, int solo_worker) {
    if (start_shared_server() != 0) exit(3);
    for (int k = 0; id == 0 && k < nchosen; k++)
        if (on_first_worker(chosen[k])) run_in_worker(run, id, chosen[k]);
    for (;;) {
        int k = atomic_fetch_add(&run->next, 1);
        if (k >= nchosen) break;
        int i = chosen[k];
        if (solo_worker || (!on_first_worker(i) && !tests[i].solo)) run_in_worker(run, id, i);
    }
    stop_shared_server();
    exit(0); /* exit, not _exit: the sanitizers' leak check runs here */
}

/* Waits for workers [from, to); a worker that died fails the test it was in. Answers how many
 * did not end well (a sanitizer's report ends a worker with a non-zero status). */
static int wait_workers(shared_run *run, const pid_t *pids, int from, int to) {
    int bad = 0;
    for (int w = from; w < to; w++) {
        int status = 0;
        while (waitpid(pids[w], &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        bad++;
        int in = run->running[w];
        if (in >= 0) run->outcome[in] = 1;
        printf("FAIL worker %d %s %d%s%s\n", w,
               WIFSIGNALED(status) ? "killed by signal" : "exited with",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
               in >= 0 ? " in " : " (a sanitizer's report above, or no server)",
               in >= 0 ? tests[in].name : "");
    }
    return bad;
}

static pid_t start_worker(shared_run *run, int id, const int *list, int n, int solo_worker) {
    run->running[id] = -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) worker(run, id, list, n, solo_worker);
    return pid;
}

/* Runs the chosen tests in `jobs` worker processes, then the solo ones in one more. A test whose
 * worker died counts as failed; a worker that ended badly fails the run. */
static int run_parallel(int jobs, const int *chosen, int nchosen, int *passed, int *failed,
                        int *skipped) {
    shared_run *run =
        mmap(NULL, sizeof *run, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (run == MAP_FAILED) return -1;
    atomic_init(&run->next, 0);
    for (int i = 0; i < MAX_TESTS; i++)
        run->outcome[i] = -1;
    test_certs(); /* made once here: the workers inherit the folder's name */
    pid_t pids[MAX_WORKERS + 1];
    for (int w = 0; w < jobs; w++)
        pids[w] = start_worker(run, w, chosen, nchosen, 0);
    int bad_workers = wait_workers(run, pids, 0, jobs);
    static int solos[MAX_TESTS];
    int nsolos = 0;
    for (int k = 0; k < nchosen; k++)
        if (tests[chosen[k]].solo && !on_first_worker(chosen[k])) solos[nsolos++] = chosen[k];
    if (nsolos) {
        atomic_store(&run->next, 0);
        pids[jobs] = start_worker(run, jobs, solos, nsolos, 1);
        bad_workers += wait_workers(run, pids, jobs, jobs + 1);
    }
    for (int k = 0; k < nchosen; k++) {
        int o = run->outcome[chosen[k]];
        *passed += o == 0, *skipped += o == 2;
        *failed += o == 1 || o == -1; /* failed, or never run because its worker died */
    }
    if (*failed == 0) *failed = bad_workers;
    munmap(run, sizeof *run);
    return 0;
}

/* test_core [-j JOBS] [NAME-PART...]: the tests whose names contain one of the parts (all without
 * any), in JOBS worker processes (1: in this one, in order). */
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int jobs = 1, first = 1;
    if (argc > 2 && strcmp(argv[1], "-j") == 0) {
        jobs = atoi(argv[2]);
        first = 3;
        if (jobs < 1 || jobs > MAX_WORKERS) {
            fprintf(stdout, "harness: -j takes 1 to %d\n0 passed, 1 failed\n", MAX_WORKERS);
            return 2;
        }
    }
    static int chosen[MAX_TESTS];
    int nchosen = 0;
    for (int i = 0; i < ntests; i++) {
        int take = argc == first;
        for (int a = first; a < argc && !take; a++)
            take = strstr(tests[i].name, argv[a]) != NULL;
        if (take) chosen[nchosen++] = i;
    }
    int passed = 0, failed = 0, skipped = 0;
    if (jobs > 1 && nchosen > 1) {
        if (run_parallel(jobs < nchosen ? jobs : nchosen, chosen, nchosen, &passed, &failed,
                         &skipped) != 0) {
            fprintf(stdout, "harness: cannot share memory with the workers\n0 passed, 1 failed\n");
            return 1;
        }
    } else {
        if (start_shared_server() != 0) {
            fprintf(stdout, "0 passed, 1 failed\n");
            return 1;
        }
        for (int k = 0; k < nchosen; k++) {
            int o = run_one(chosen[k]);
            passed += o == 0, failed += o == 1, skipped += o == 2;
        }
        stop_shared_server();
    }
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

long long lock_keys(void) {
    redisReply *latches = raw(g_raw, "KEYS redisson_unlock_latch*");
    long long n = raw_int(g_raw, "DBSIZE") - (long long)latches->elements;
    freeReplyObject(latches);
    return n;
}

/* The harness's own check (tests/packaging/test_c_harness.py): with REDLEASE_HARNESS_SELFTEST
 * set, two more tests, one of which ends its process as a crash would. Never registered in a
 * plain run. */
static void harness_selftest_passes(void) {
    CHECK(1 + 1 == 2);
}
static void harness_selftest_dies(void) {
    fflush(stdout);
    abort();
}
__attribute__((constructor)) static void register_harness_selftest(void) {
    if (!getenv("REDLEASE_HARNESS_SELFTEST")) return;
    test_register("harness_selftest_passes", harness_selftest_passes, 0);
    test_register("harness_selftest_dies", harness_selftest_dies, 0);
}
