/* Connections: script reload, reconnects, AUTH/SELECT, unix sockets, SIGPIPE. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

TEST(noscript_reloads_after_script_flush) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "ns");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    freeReplyObject(raw(g_raw, "SCRIPT FLUSH"));
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    freeReplyObject(raw(g_raw, "SCRIPT FLUSH"));
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err)); /* reentry after another flush */
    freeReplyObject(raw(g_raw, "SCRIPT FLUSH"));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS ns"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(reconnects_after_client_kill) {
    rl_client *c = new_client(g_server.url, 600);
    rl_lock *l = new_lock(c, "killed");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(300); /* the watchdog has renewed once: its connection is open */
    long long killed = raw_int(g_raw, "CLIENT KILL TYPE normal SKIPME yes");
    CHECK_MSG(killed >= 2, "killed %lld connections", killed); /* command + watchdog */
    sleep_ms(50);
    int64_t count;
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 1);
    sleep_ms(800); /* the watchdog reconnected too: the 600 ms lease was renewed */
    CHECK(raw_int(g_raw, "PTTL killed") > 0);
    raw_int(g_raw, "CLIENT KILL TYPE normal SKIPME yes");
    sleep_ms(50);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS killed"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Nearly every pooled connection's last call is a release: a server that closes such a connection
 * while it is idle (CLIENT KILL, a restart, an idle timeout) must cost the next acquire nothing. */
TEST(acquire_after_the_server_closed_connections_idle_since_a_release) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "idle-killed");
    for (int round = 0; round < 3; round++) {
        CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
        sleep_ms(50); /* the release has fully settled: only then is the connection idle */
        long long killed = raw_int(g_raw, "CLIENT KILL TYPE normal SKIPME yes");
        CHECK_MSG(killed >= 1, "round %d: killed %lld connections", round, killed);
        sleep_ms(50);
    }
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    CHECK_INT(raw_int(g_raw, "EXISTS idle-killed"), 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(auth_password_acl_user_and_select) {
    test_server s;
    const char *args[] = {"--requirepass", "s3cret", NULL};
    CHECK(server_start(&s, args) == 0);
    char url[160];
    snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d/3", s.port);
    rl_client *c = new_client(url, 0);
    rl_lock *l = new_lock(c, "authed");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    redisContext *r = server_connect(&s);
    freeReplyObject(raw(r, "AUTH s3cret"));
    freeReplyObject(raw(r, "SELECT 3"));
    CHECK_INT(raw_int(r, "EXISTS authed"), 1);
    freeReplyObject(raw(r, "ACL SETUSER alice on >pw ~* &* +@all"));
    rl_lock_free(l);
    rl_client_free(c);

    snprintf(url, sizeof url, "redis://alice:pw@127.0.0.1:%d/3", s.port);
    c = new_client(url, 0);
    CHECK_OK(rl_lock_new(c, "authed", 6, &l, err));
    CHECK_STATUS(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    rl_lock_free(l);
    rl_client_free(c);

    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", s.port);
    c = new_client(url, 0);
    CHECK_OK(rl_lock_new(c, "authed", 6, &l, err));
    rl_error e;
    CHECK_INT(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, &e), RL_ERR_CONNECTION);
    CHECK_MSG(strstr(e.message, "authentication") != NULL, "message: %s", e.message);
    rl_lock_free(l);
    rl_client_free(c);
    redisFree(r);
    server_stop(&s);
}

TEST(unix_socket_url) {
    char url[160];
    snprintf(url, sizeof url, "unix://%s?db=2", g_server.socket);
    rl_client *c = new_client(url, 0);
    rl_lock *l = new_lock(c, "viaunix");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    freeReplyObject(raw(g_raw, "SELECT 2"));
    CHECK_INT(raw_int(g_raw, "EXISTS viaunix"), 1);
    freeReplyObject(raw(g_raw, "SELECT 0"));
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(dead_server_gives_connection_errors_not_sigpipe) {
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    sigaction(SIGPIPE, &dfl, &old);
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    rl_options o;
    rl_options_init(&o);
    o.connect_timeout_ms = 500;
    o.command_timeout_ms = 500;
    rl_client *c;
    CHECK_OK(rl_client_new(s.url, &o, &c, err));
    rl_lock *l = new_lock(c, "d");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    server_stop(&s);
    for (int i = 0; i < 5; i++) {
        int locked;
        CHECK_STATUS(rl_lock_is_locked(l, &locked, err), RL_ERR_CONNECTION);
        CHECK_STATUS(rl_lock_acquire(l, 2, 5000, 0, NULL, NULL, err), RL_ERR_CONNECTION);
    }
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_ERR_CONNECTION);
    sigaction(SIGPIPE, &old, NULL);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(closed_client_answers_closed) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "cl");
    rl_client_free(c); /* the lock keeps the memory alive */
    CHECK_STATUS(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err), RL_ERR_CLOSED);
    int locked;
    CHECK_STATUS(rl_lock_is_locked(l, &locked, err), RL_ERR_CLOSED);
    rl_lock_free(l);
}
