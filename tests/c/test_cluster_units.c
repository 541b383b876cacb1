/* Redis Cluster's pieces that need no cluster: redis+cluster:// URLs, the key -> slot rule (CRC16
 * and hash tags), the redirect answers, and names refused because their keys would fall in two
 * slots. The cluster itself is exercised by tests/cluster. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "names.h"
#include "redirect.h"
#include "slots.h"
#include "url.h"

TEST(cluster_url_seeds) {
    rl_endpoint ep;
    CHECK_OK(rl_endpoint_parse("redis+cluster://u:p%21@10.0.0.1:7000,[::1]:7001,h", &ep, err));
    CHECK(ep.cluster && ep.seeds == 3 && !ep.sentinels);
    CHECK(strcmp(ep.seed_hosts[0], "10.0.0.1") == 0 && ep.seed_ports[0] == 7000);
    CHECK(strcmp(ep.seed_hosts[1], "::1") == 0 && ep.seed_ports[1] == 7001);
    CHECK(strcmp(ep.seed_hosts[2], "h") == 0 && ep.seed_ports[2] == 6379);
    CHECK(strcmp(ep.user, "u") == 0 && strcmp(ep.password, "p!") == 0 && ep.db == 0);
    rl_endpoint_free(&ep);
    CHECK_OK(rl_endpoint_parse("redis+cluster://127.0.0.1:7000/", &ep, err));
    CHECK(ep.seeds == 1);
    rl_endpoint_free(&ep);
}

TEST(cluster_url_bad_input) {
    const char *bad[] = {"redis+cluster://",
                         "redis+cluster://h:7000/0",
                         "redis+cluster://h:7000,h:7001/3",
                         "redis+cluster://h:7000,,h:7001",
                         "redis+cluster://h:notaport",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        rl_endpoint ep;
        rl_error e;
        rl_status st = rl_endpoint_parse(bad[i], &ep, &e);
        CHECK_MSG(st == RL_ERR_ARGUMENT, "\"%s\" gave %s", bad[i], rl_status_name(st));
        CHECK_MSG(e.message[0] != '\0', "\"%s\" has no message", bad[i]);
    }
    char *shown = rl_url_redacted("redis+cluster://u:secret@h:1,h:2");
    CHECK(shown && strcmp(shown, "redis+cluster://u:***@h:1,h:2") == 0);
    free(shown);
}

/* Values as `redis-cli cluster keyslot` answers them. */
TEST(cluster_key_slots) {
    CHECK(rl_key_slot("123456789", 9) == 12739); /* CRC16/XMODEM("123456789") = 0x31C3 */
    CHECK(rl_key_slot("foo", 3) == 12182);
    CHECK(rl_key_slot("doc", 3) == 122);
    CHECK(rl_key_slot("redisson_lock__channel:{doc}", 28) == 122);
    CHECK(rl_key_slot("{user1000}.following", 20) == rl_key_slot("user1000", 8));
    CHECK(rl_key_slot("a}b", 3) == 7866);
    CHECK(rl_key_slot("redisson_lock__channel:{a}b}", 28) == 15495);
    CHECK(rl_key_slot("x{}y", 4) != rl_key_slot("", 0)); /* an empty tag does not count */
    CHECK(rl_key_slot("{a}{b}", 6) == rl_key_slot("a", 1));
}

TEST(cluster_names_that_fit_one_slot) {
    CHECK(rl_name_fits_one_slot("doc", 3));
    CHECK(rl_name_fits_one_slot("order{42}:x", 11));
    CHECK(rl_name_fits_one_slot("x}{y}", 5));
    CHECK(!rl_name_fits_one_slot("a}b", 3));
    CHECK(!rl_name_fits_one_slot("x{}y", 4));
    rl_error e;
    CHECK(rl_name_check_cluster("a}b", 3, "lock", &e) == RL_ERR_ARGUMENT);
    CHECK(strstr(e.message, "cannot be used on a Redis Cluster") != NULL);
}

static redisReply error_reply(const char *text) {
    redisReply r = {.type = REDIS_REPLY_ERROR, .str = (char *)text, .len = strlen(text)};
    return r;
}

TEST(cluster_redirect_answers) {
    rl_redirect rd;
    redisReply r = error_reply("MOVED 3999 127.0.0.1:6381");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_MOVED);
    CHECK(rd.slot == 3999 && strcmp(rd.host, "127.0.0.1") == 0 && rd.port == 6381);
    r = error_reply("ASK 12 ::1:7002");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_ASK);
    CHECK(rd.slot == 12 && strcmp(rd.host, "::1") == 0 && rd.port == 7002);
    /* An empty host (Redis 7, cluster-preferred-endpoint-type unknown-endpoint): the node that
     * answered; the caller fills it in. */
    r = error_reply("MOVED 3999 :6381");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_MOVED);
    CHECK(rd.slot == 3999 && rd.host[0] == '\0' && rd.port == 6381);
    r = error_reply("ASK 3999 :6382");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_ASK);
    CHECK(rd.slot == 3999 && rd.host[0] == '\0' && rd.port == 6382);
    r = error_reply("TRYAGAIN Multiple keys request during rehashing of slot");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_TRYAGAIN);
    r = error_reply("CLUSTERDOWN The cluster is down");
    CHECK(rl_redirect_parse(&r, &rd) == RL_REDIRECT_CLUSTERDOWN);
    const char *not_ones[] = {"MOVED",        "MOVED x h:1", "MOVED 99999 h:1",
                              "MOVED 1 h",    "MOVED 1 :",   "MOVED 1 :0",
                              "MOVEDX 1 h:1", "ERR wrong",   NULL};
    for (int i = 0; not_ones[i]; i++) {
        r = error_reply(not_ones[i]);
        CHECK_MSG(rl_redirect_parse(&r, &rd) == RL_REDIRECT_NONE, "\"%s\"", not_ones[i]);
    }
    redisReply ok = {.type = REDIS_REPLY_STATUS, .str = "OK", .len = 2};
    CHECK(rl_redirect_parse(&ok, &rd) == RL_REDIRECT_NONE);
}
