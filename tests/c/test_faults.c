/* The core under injected network faults, through tests/faults/proxy.py run as a process. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

typedef struct proxy {
    pid_t pid;
    FILE *to, *from;
    char url[64];
} proxy;

/* Starts the proxy in front of the shared server; 0 on success. */
static int proxy_start(proxy *p) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    char port[16];
    snprintf(port, sizeof port, "%d", g_server.port);
    p->pid = fork();
    if (p->pid < 0) return -1;
    if (p->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp("python3", "python3", "tests/faults/proxy.py", port, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    int listen_port = 0;
    char line[64];
    if (!p->to || !p->from || !fgets(line, sizeof line, p->from) ||
        sscanf(line, "port %d", &listen_port) != 1)
        return -1;
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", listen_port);
    return 0;
}

/* Sends one command ("refuse", "pass", ...) and waits for its "ok". */
static int proxy_do(proxy *p, const char *command) {
    char line[64];
    fprintf(p->to, "%s\n", command);
    fflush(p->to);
    return fgets(line, sizeof line, p->from) && strncmp(line, "ok", 2) == 0 ? 0 : -1;
}

static void proxy_stop(proxy *p) {
    if (p->to) fclose(p->to); /* EOF: the proxy exits */
    if (p->from) fclose(p->from);
    int status;
    waitpid(p->pid, &status, 0);
}

typedef struct lost_events {
    pthread_mutex_t mu;
    int count;
    rl_lost_reason reason;
} lost_events;

static void on_event(const rl_event *ev, void *userdata) {
    lost_events *log = userdata;
    if (ev->kind != RL_EVENT_LOST) return;
    pthread_mutex_lock(&log->mu);
    log->count++;
    log->reason = ev->reason;
    pthread_mutex_unlock(&log->mu);
}

static int lost_count(lost_events *log) {
    pthread_mutex_lock(&log->mu);
    int n = log->count;
    pthread_mutex_unlock(&log->mu);
    return n;
}

static rl_client *faulty_client(const char *url, int64_t watchdog_ms, lost_events *log) {
    rl_options o;
    rl_options_init(&o);
    o.watchdog_timeout_ms = watchdog_ms;
    o.connect_timeout_ms = 200;
    o.command_timeout_ms = 200;
    o.on_event = on_event;
    o.event_userdata = log;
    rl_client *c = NULL;
    rl_error e;
    return rl_client_new(url, &o, &c, &e) == RL_OK ? c : NULL;
}

TEST(outage_shorter_than_the_lease_is_survived_longer_is_reported) {
    proxy p = {0};
    CHECK(proxy_start(&p) == 0);
    lost_events log = {.count = 0};
    pthread_mutex_init(&log.mu, NULL);
    rl_client *c = faulty_client(p.url, 900, &log); /* renewed every 300 ms */
    CHECK(c);
    rl_lock *l = new_lock(c, "outage");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(350); /* one renewal went through: a full lease confirmed */

    CHECK(proxy_do(&p, "refuse") == 0);
    sleep_ms(350);
    CHECK(proxy_do(&p, "pass") == 0);
    sleep_ms(1300); /* more than a lease: only renewals kept it */
    CHECK_INT(lost_count(&log), 0);
    CHECK(!rl_lock_lost(l, 1, NULL));
    CHECK(raw_int(g_raw, "PTTL outage") > 0);

    CHECK(proxy_do(&p, "blackhole") == 0);
    int64_t t0 = now_ms();
    while (lost_count(&log) == 0 && now_ms() - t0 < 4000)
        sleep_ms(10);
    int64_t took = now_ms() - t0;
    CHECK_INT(lost_count(&log), 1);
    CHECK_INT(log.reason, RL_LOST_UNREACHABLE);
    CHECK_MSG(took >= 500 && took <= 900 + 300 + 500, "reported after %lld ms (lease 900)",
              (long long)took);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    CHECK(proxy_do(&p, "pass") == 0);
    rl_lock_free(l);
    rl_client_free(c);
    proxy_stop(&p);
    pthread_mutex_destroy(&log.mu);
}

TEST(failed_release_stops_renewal_and_its_retry_counts_once) {
    proxy p = {0};
    CHECK(proxy_start(&p) == 0);
    lost_events log = {.count = 0};
    pthread_mutex_init(&log.mu, NULL);
    rl_client *c = faulty_client(p.url, 3000, &log); /* the key outlives the test's pauses */
    CHECK(c);
    rl_lock *l, *warm;
    CHECK_OK(rl_lock_new(c, "warm", 4, &warm, err)); /* scripts loaded before the fault */
    CHECK_OK(rl_lock_acquire(warm, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(warm, 1, err));
    CHECK_OK(rl_lock_new(c, "twice", 5, &l, err));
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));

    CHECK(proxy_do(&p, "mute") == 0); /* the release reaches Redis, its answer does not */
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_ERR_CONNECTION);
    CHECK(proxy_do(&p, "pass") == 0);
    CHECK(proxy_do(&p, "cut") == 0);
    long long pttl = raw_int(g_raw, "PTTL twice");
    sleep_ms(1200); /* more than a renewal period (1 s): renewal stopped at the failed release */
    CHECK_MSG(raw_int(g_raw, "PTTL twice") < pttl - 1100, "renewed after a failed release");

    CHECK_OK(rl_lock_release(l, 1, err)); /* retried: answered by the latch, applied once */
    CHECK_INT(rl_lock_local_holds(l, 1), 1);
    redisReply *r = raw(g_raw, "HVALS twice");
    int one_hold =
        r->type == REDIS_REPLY_ARRAY && r->elements == 1 && strcmp(r->element[0]->str, "1") == 0;
    freeReplyObject(r);
    CHECK_MSG(one_hold, "Redis keeps %lld holds", raw_int(g_raw, "HLEN twice"));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS twice"), 0);
    CHECK_INT(lost_count(&log), 0);
    rl_lock_free(warm);
    rl_lock_free(l);
    rl_client_free(c);
    proxy_stop(&p);
    pthread_mutex_destroy(&log.mu);
}

TEST(unreachable_loss_is_declared_when_the_confirmed_lease_ends) {
    proxy p = {0};
    CHECK(proxy_start(&p) == 0);
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(p.url, 3000, 700, &log); /* rounds every 1 s, time out after 0.7 s */
    rl_lock *l = new_lock(c, "deadline");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(1100); /* one renewal confirmed */
    int64_t expires_at = now_ms() + raw_int(g_raw, "PTTL deadline");
    CHECK(proxy_do(&p, "blackhole") == 0);
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 6000);
    int64_t late = log.last_lost_at - expires_at;
    CHECK_INT(log.reason, RL_LOST_UNREACHABLE);
    /* Declared when the lease Redis confirmed ends (another owner may take it from then on),
     * not a round's timeout or a back-off later. */
    CHECK_MSG(late > -400 && late < 250, "declared %lld ms after the key expired", (long long)late);
    CHECK(proxy_do(&p, "pass") == 0);
    rl_lock_free(l);
    rl_client_free(c);
    proxy_stop(&p);
    event_log_destroy(&log);
}

TEST(contended_acquire_does_not_wait_for_its_unsubscribe) {
    proxy p = {0};
    CHECK(proxy_start(&p) == 0);
    CHECK(proxy_do(&p, "latency 0.2") == 0); /* each way: a round trip takes 400 ms */
    rl_client *holder = new_client(g_server.url, 0), *c = client_with(p.url, 0, 3000, NULL);
    rl_lock *lh = new_lock(holder, "handoff");
    rl_lock *l = new_lock(c, "handoff");
    CHECK_OK(rl_lock_acquire(lh, 1, 1500, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 10000, NULL, NULL, err)); /* woken at the lease's end */
    rl_stats st;
    rl_client_stats(c, &st);
    CHECK_MSG(st.subscriptions == 1, "the acquire waited for its UNSUBSCRIBE to be confirmed");
    CHECK_INT(rl_lock_local_holds(l, 1), 1);
    CHECK_SOON((rl_client_stats(c, &st), st.subscriptions == 0), 3000);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK(proxy_do(&p, "latency 0") == 0);
    rl_lock_free(lh);
    rl_lock_free(l);
    rl_client_free(holder);
    rl_client_free(c);
    proxy_stop(&p);
}
