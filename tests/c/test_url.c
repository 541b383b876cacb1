/* URL parsing and option checking: bad input gets a clear, typed error. */
#include <string.h>

#include "harness.h"
#include "url.h"

static rl_status parse(const char *url, rl_endpoint *ep, rl_error *err) {
    return rl_endpoint_parse(url, ep, err);
}

TEST(url_tcp_forms) {
    rl_endpoint ep;
    CHECK_OK(parse("redis://127.0.0.1", &ep, err));
    CHECK(strcmp(ep.host, "127.0.0.1") == 0 && ep.port == 6379 && ep.db == 0 && !ep.password);
    rl_endpoint_free(&ep);
    CHECK_OK(parse("redis://:s%40cret@localhost:7000/5", &ep, err));
    CHECK(strcmp(ep.host, "localhost") == 0 && ep.port == 7000 && ep.db == 5);
    CHECK(!ep.user && strcmp(ep.password, "s@cret") == 0);
    rl_endpoint_free(&ep);
    CHECK_OK(parse("redis://alice:pw@[::1]:6380/", &ep, err));
    CHECK(strcmp(ep.host, "::1") == 0 && ep.port == 6380 && strcmp(ep.user, "alice") == 0);
    rl_endpoint_free(&ep);
    CHECK_OK(parse("unix:///tmp/r.sock?db=3", &ep, err));
    CHECK(ep.is_unix && strcmp(ep.host, "/tmp/r.sock") == 0 && ep.db == 3);
    rl_endpoint_free(&ep);
    CHECK_OK(parse("unix://bob:pw@/tmp/r.sock", &ep, err));
    CHECK(ep.is_unix && strcmp(ep.user, "bob") == 0 && strcmp(ep.password, "pw") == 0);
    rl_endpoint_free(&ep);
}

TEST(url_bad_input_is_a_typed_error) {
    const char *bad[] = {"",
                         "http://x",
                         "redis://",
                         "redis://host:0",
                         "redis://host:99999",
                         "redis://host:12ab",
                         "redis://host/notadb",
                         "redis://[::1",
                         "redis://a:%zz@host",
                         "unix://",
                         "unix://relative/path",
                         "unix:///tmp/s?db=x",
                         "unix:///tmp/s?foo=1",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        rl_endpoint ep;
        rl_error e;
        rl_status st = parse(bad[i], &ep, &e);
        CHECK_MSG(st == RL_ERR_ARGUMENT, "\"%s\" gave %s", bad[i], rl_status_name(st));
        CHECK_MSG(e.message[0] != '\0', "\"%s\" has no message", bad[i]);
    }
    rl_endpoint ep;
    CHECK_STATUS(parse(NULL, &ep, err), RL_ERR_ARGUMENT);
}

TEST(url_rediss_needs_a_build_with_tls) {
    rl_client *c = NULL;
    rl_error e;
    rl_status st = rl_client_new("rediss://127.0.0.1:6380", NULL, &c, &e);
    if (rl_tls_supported()) {
        CHECK_MSG(st == RL_OK, "%s", e.message); /* connects nothing yet */
        rl_client_free(c);
    } else {
        CHECK_INT(st, RL_ERR_UNSUPPORTED);
        CHECK(c == NULL && strstr(e.message, "TLS") != NULL);
    }
}

TEST(options_are_checked) {
    rl_options o;
    rl_client *c = NULL;
    rl_options_init(&o);
    o.watchdog_timeout_ms = 0;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    rl_options_init(&o);
    o.pool_size = 0;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    rl_options_init(&o);
    o.command_timeout_ms = -5;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    rl_options_init(&o);
    o.handover_grace_ms = -1;
    rl_error e;
    CHECK_INT(rl_client_new(g_server.url, &o, &c, &e), RL_ERR_ARGUMENT);
    CHECK(strstr(e.message, "handover_grace") != NULL);
    rl_options_init(&o);
    o.handover_grace_ms = 1001;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    CHECK(c == NULL);
}

/* No password in any message or in the URL a client shows, whatever the URL looks like. */
TEST(url_passwords_never_shown) {
    static const struct {
        const char *url, *shown; /* shown: NULL when the URL is refused */
    } cases[] = {
        {"redis://u:S3CRET@127.0.0.1:1/0", "redis://u:***@127.0.0.1:1/0"},
        {"redis://:S3CRET@127.0.0.1:1", "redis://:***@127.0.0.1:1"},
        {"redis://u:p@S3CRET@127.0.0.1:1", "redis://u:***@127.0.0.1:1"},
        {"redis://u:S3CRET%40x@127.0.0.1:1", "redis://u:***@127.0.0.1:1"},
        {"unix://u:S3CRET@/tmp/r.sock?db=1", "unix://u:***@/tmp/r.sock?db=1"},
        {"redis://alice@127.0.0.1:1", "redis://alice@127.0.0.1:1"},
        {"redis://127.0.0.1:1", "redis://127.0.0.1:1"},
        {"http://u:S3CRET@127.0.0.1", NULL},
        {"redis//u:S3CRET@127.0.0.1", NULL},
        {"S3CRET", NULL},
        {"redis://u:S3CRET@127.0.0.1:notaport", NULL},
        {"redis://u:S3CRET@127.0.0.1/notadb", NULL},
        {"redis://u:S3C%zzRET@127.0.0.1", NULL},
        {"redis://u:S3CRET@", NULL},
        {"unix://u:S3CRET/tmp/r.sock", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rl_client *c = NULL;
        rl_error e = {0};
        rl_status st = rl_client_new(cases[i].url, NULL, &c, &e);
        CHECK_MSG(!strstr(e.message, "S3C"), "%s: the message shows the password: %s", cases[i].url,
                  e.message);
        if (!cases[i].shown) {
            CHECK_MSG(st != RL_OK && e.message[0], "%s was accepted", cases[i].url);
            continue;
        }
        CHECK_MSG(st == RL_OK, "%s: %s", cases[i].url, e.message);
        CHECK_MSG(strcmp(rl_client_url(c), cases[i].shown) == 0, "%s shown as %s", cases[i].url,
                  rl_client_url(c));
        rl_client_free(c);
    }
}
