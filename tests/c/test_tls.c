/* rediss://: locks, waits, renewal and reconnects over verified TLS; refused certificates say
 * why; mutual TLS; bad TLS options refused before anything is sent. The certificates come from
 * tests/tls/make-certs. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn_name.h"
#include "harness.h"

/* The options for a client of the test CA (and of the client certificate when mtls is set). */
static void tls_options(rl_options *o, int mtls) {
    static char ca[128], cert[128], key[128];
    snprintf(ca, sizeof ca, "%s/ca.crt", test_certs());
    snprintf(cert, sizeof cert, "%s/client.crt", test_certs());
    snprintf(key, sizeof key, "%s/client.key", test_certs());
    rl_options_init(o);
    o->connect_timeout_ms = o->command_timeout_ms = 2000;
    o->tls_ca_file = ca;
    if (mtls) {
        o->tls_cert_file = cert;
        o->tls_key_file = key;
    }
}

static rl_status try_lock(const char *url, const rl_options *o, rl_error *e) {
    rl_client *c;
    rl_status st = rl_client_new(url, o, &c, e);
    if (st != RL_OK) return st;
    rl_lock *l = new_lock(c, "tls");
    st = rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, e);
    if (st == RL_OK) st = rl_lock_release(l, 1, e);
    rl_lock_free(l);
    rl_client_free(c);
    return st;
}

#define NEEDS_TLS()                                                                                \
    do {                                                                                           \
        if (!rl_tls_supported()) {                                                                 \
            test_skip("this build has no TLS (make TLS=0)");                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

TEST(tls_locks_waits_and_renewals) {
    NEEDS_TLS();
    test_server s;
    CHECK(tls_server_start(&s, NULL, 0) == 0);
    rl_options o;
    tls_options(&o, 0);
    o.watchdog_timeout_ms = 600; /* renewed every 200 ms */
    rl_client *a, *b;
    CHECK_OK(rl_client_new(s.tls_url, &o, &a, err));
    CHECK_OK(rl_client_new(s.tls_url, &o, &b, err));
    rl_lock *la = new_lock(a, "over-tls"), *lb = new_lock(b, "over-tls");
    CHECK_OK(rl_lock_acquire(la, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    waiter w = {.lock = lb, .context = 1, .wait_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    sleep_ms(1500); /* more than two leases: renewed over TLS */
    redisContext *r = server_connect(&s);
    CHECK(raw_int(r, "PTTL over-tls") > 0);
    int64_t released_at = now_ms();
    CHECK_OK(rl_lock_release(la, 1, err));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK); /* woken by the release message, over TLS */
    CHECK_MSG(w.acquired_at - released_at < 1000, "woken after %lld ms",
              (long long)(w.acquired_at - released_at));
    CHECK_OK(rl_lock_release(lb, 1, err));
    /* Killed connections reconnect with a new handshake. */
    CHECK(raw_int(r, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
    sleep_ms(50);
    CHECK_OK(rl_lock_acquire(la, 1, 5000, 0, NULL, NULL, err));
    /* ... which names the connection again (CLIENT SETNAME rides with it over TLS). */
    redisReply *list = raw(r, "CLIENT LIST");
    char label[128];
    int named = rl_conn_name_find(list->str, list->len, rl_client_id(a), label, sizeof label);
    freeReplyObject(list);
    CHECK_MSG(named && strchr(label, ':') != NULL, "named %d: %s", named, label);
    rl_inspection *in;
    CHECK_OK(rl_inspect(b, "over-tls", 8, &in, err));
    int same = in->n_owners == 1 && strcmp(in->owners[0].name, label) == 0;
    rl_inspection_free(in);
    CHECK_MSG(same, "inspect over TLS shows the holder's name %s", label);
    CHECK_OK(rl_lock_release(la, 1, err));
    CHECK_INT(raw_int(r, "EXISTS over-tls"), 0);
    redisFree(r);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
    server_stop(&s);
}

TEST(tls_refuses_a_certificate_it_cannot_verify_and_says_why) {
    NEEDS_TLS();
    test_server s;
    CHECK(tls_server_start(&s, "rogue", 0) == 0); /* signed by a CA nobody trusts */
    rl_options o;
    tls_options(&o, 0);
    rl_error e;
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_ERR_CONNECTION);
    CHECK_MSG(strstr(e.message, "verification failed"), "message: %s", e.message);
    o.tls_insecure_skip_verify = 1; /* the loud switch: encrypts, verifies nothing */
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_OK);
    server_stop(&s);

    CHECK(tls_server_start(&s, NULL, 0) == 0);
    tls_options(&o, 0);
    o.tls_server_name = "not-this-server.example";
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_ERR_CONNECTION);
    CHECK_MSG(strstr(e.message, "verification failed") && strstr(e.message, "not-this-server"),
              "message: %s", e.message);
    o.tls_server_name = "localhost"; /* a name the certificate carries */
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_OK);
    /* Plain text to a TLS port is no fallback: it fails. */
    char plain[96];
    snprintf(plain, sizeof plain, "redis://127.0.0.1:%d", s.tls_port);
    rl_options_init(&o);
    o.connect_timeout_ms = o.command_timeout_ms = 1000;
    CHECK_INT(try_lock(plain, &o, &e), RL_ERR_CONNECTION);
    server_stop(&s);
}

TEST(tls_mutual_needs_the_client_certificate) {
    NEEDS_TLS();
    test_server s;
    CHECK(tls_server_start(&s, NULL, 1) == 0);
    rl_options o;
    tls_options(&o, 0);
    rl_error e;
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_ERR_CONNECTION);
    tls_options(&o, 1);
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_OK);
    server_stop(&s);
}

TEST(tls_bad_options_are_refused_before_anything_is_sent) {
    rl_options o;
    rl_client *c = NULL;
    rl_options_init(&o);
    o.tls_ca_file = "/nonexistent/ca.crt";
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT); /* redis:// */
    if (!rl_tls_supported()) {
        CHECK_STATUS(rl_client_new("rediss://127.0.0.1:1", NULL, &c, err), RL_ERR_UNSUPPORTED);
        return;
    }
    rl_error e;
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK_MSG(strstr(e.message, "tls_ca_file") && strstr(e.message, "/nonexistent/ca.crt"),
              "message: %s", e.message);
    tls_options(&o, 1);
    o.tls_cert_file = NULL; /* a key without its certificate */
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK_MSG(strstr(e.message, "go together"), "message: %s", e.message);
    tls_options(&o, 1);
    char wrong_key[128];
    snprintf(wrong_key, sizeof wrong_key, "%s/server.key", test_certs());
    o.tls_key_file = wrong_key;
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK_MSG(strstr(e.message, "does not match"), "message: %s", e.message);
    tls_options(&o, 0);
    o.tls_ca_file = "tests/tls/make-certs"; /* readable, but no certificate */
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK(c == NULL);
}

/* A certificate file of the test set. */
static const char *cert_path(char *out, size_t size, const char *file) {
    snprintf(out, size, "%s/%s", test_certs(), file);
    return out;
}

/* rl_client_new in a child without a terminal whose stdin is a pipe that stays open (where a
 * passphrase prompt would wait for ever): its status and message, or -1 when it blocked. */
static int new_client_in_a_child(const char *url, const rl_options *o, char *message, size_t size) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setsid(); /* no controlling terminal: OpenSSL would prompt on stdin */
        dup2(in[0], 0);
        rl_client *c;
        rl_error e = {0};
        int st = rl_client_new(url, o, &c, &e);
        char line[sizeof e.message + 16];
        int n = snprintf(line, sizeof line, "%d %s", st, e.message);
        (void)!write(out[1], line, (size_t)n);
        _exit(0);
    }
    close(in[0]);
    close(out[1]);
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    int st = -1;
    if (poll(&p, 1, 5000) == 1) {
        char line[1024];
        ssize_t n = read(out[0], line, sizeof line - 1);
        line[n > 0 ? n : 0] = '\0';
        char *space = strchr(line, ' ');
        if (space) {
            st = atoi(line);
            snprintf(message, size, "%s", space + 1);
        }
    } else {
        kill(pid, SIGKILL);
        snprintf(message, size, "blocked (a passphrase prompt?)");
    }
    waitpid(pid, NULL, 0);
    close(in[1]);
    close(out[0]);
    return st;
}

TEST(tls_an_encrypted_key_is_refused_not_prompted_for) {
    NEEDS_TLS();
    rl_options o;
    tls_options(&o, 1);
    char key[128], message[300];
    o.tls_key_file = cert_path(key, sizeof key, "client-encrypted.key");
    int st = new_client_in_a_child("rediss://127.0.0.1:1", &o, message, sizeof message);
    CHECK_MSG(st == RL_ERR_ARGUMENT, "status %d: %s", st, message);
    CHECK_MSG(strstr(message, "tls_key_file") && strstr(message, "encrypted"), "message: %s",
              message);
}

TEST(tls_ca_dir_is_checked_when_the_client_is_made) {
    NEEDS_TLS();
    rl_options o;
    rl_client *c = NULL;
    rl_error e;
    rl_options_init(&o);
    o.tls_ca_dir = "/nonexistent/ca-dir";
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK_MSG(strstr(e.message, "tls_ca_dir") && strstr(e.message, "/nonexistent/ca-dir"),
              "message: %s", e.message);
    char empty[] = "/tmp/rlcadir.XXXXXX", cmd[512];
    CHECK(mkdtemp(empty) != NULL);
    o.tls_ca_dir = empty; /* a directory, but no hashed certificate in it */
    CHECK_INT(rl_client_new("rediss://127.0.0.1:1", &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK_MSG(strstr(e.message, "tls_ca_dir") && strstr(e.message, "hashed"), "message: %s",
              e.message);
    /* The same directory once it holds the test CA, hashed: verified connections. */
    snprintf(cmd, sizeof cmd, "cp %s/ca.crt %s/ && openssl rehash %s", test_certs(), empty, empty);
    CHECK(system(cmd) == 0);
    test_server s;
    CHECK(tls_server_start(&s, NULL, 0) == 0);
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_OK);
    server_stop(&s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", empty);
    CHECK(system(cmd) == 0);
}

TEST(tls_refuses_a_partial_wildcard) {
    NEEDS_TLS();
    test_server s;
    CHECK(tls_server_start(&s, "wild", 0) == 0); /* DNS:re*.example.test */
    rl_options o;
    tls_options(&o, 0);
    o.tls_server_name = "redis.example.test";
    rl_error e;
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_ERR_CONNECTION);
    CHECK_MSG(strstr(e.message, "verification failed"), "message: %s", e.message);
    o.tls_server_name = NULL; /* its IP address is in it: the certificate itself is good */
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_OK);
    server_stop(&s);
}

TEST(tls_verification_error_is_never_cut) {
    NEEDS_TLS();
    test_server s;
    CHECK(tls_server_start(&s, "rogue", 0) == 0);
    rl_options o;
    tls_options(&o, 0);
    char name[256] = "", label[64];
    memset(label, 'a', 62);
    label[62] = '\0';
    for (int i = 0; i < 3; i++) /* 3 labels of 62, then "example": 196 characters */
        snprintf(name + strlen(name), sizeof name - strlen(name), "%s.", label);
    strcat(name, "example");
    o.tls_server_name = name;
    rl_error e;
    CHECK_INT(try_lock(s.tls_url, &o, &e), RL_ERR_CONNECTION);
    char expected[300];
    snprintf(expected, sizeof expected, "(expected name %s)", name);
    CHECK_MSG(strstr(e.message, "verification failed: ") && strstr(e.message, expected),
              "message: %s", e.message);
    server_stop(&s);
}
