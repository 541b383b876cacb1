/* Client names: each connection names itself (CLIENT SETNAME "redlease:<client id>:<label>",
 * the label client_name or "<host>:<pid>"), rl_inspect shows the holders' and waiters' names
 * beside their ids (CLIENT LIST at the lock's server), bad names are refused, and a server that
 * refuses CLIENT leaves the client working, unnamed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn_name.h"
#include "harness.h"

/* The name Redis has for a connection of client `id`, or "" (CLIENT LIST on the raw link). */
static void name_in_list(redisContext *r, const char *id, char *label, size_t size) {
    redisReply *list = raw(r, "CLIENT LIST");
    rl_conn_name_find(list->str, list->len, id, label, size);
    freeReplyObject(list);
}

static void host_and_pid(char *out, size_t size) {
    char host[256] = "";
    gethostname(host, sizeof host);
    host[64] = '\0';
    snprintf(out, size, "%s:%ld", host, (long)getpid());
}

static rl_client *named_client(const char *url, const char *name) {
    rl_options o;
    rl_options_init(&o);
    o.client_name = name;
    rl_client *c = NULL;
    rl_error e;
    return rl_client_new(url, &o, &c, &e) == RL_OK ? c : NULL;
}

TEST(names_each_connection_names_itself) {
    char mine[128], label[128];
    host_and_pid(mine, sizeof mine);
    char given[] = "billing-worker/7";
    rl_client *plain = new_client(g_server.url, 0), *named = named_client(g_server.url, given);
    CHECK(named != NULL);
    given[0] = 'X'; /* copied when the client was made */
    rl_lock *a = new_lock(plain, "n1"), *b = new_lock(named, "n2");
    CHECK_OK(rl_lock_acquire(a, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(b, 1, 10000, 0, NULL, NULL, err));
    name_in_list(g_raw, rl_client_id(plain), label, sizeof label);
    CHECK_MSG(strcmp(label, mine) == 0, "%s, not %s", label, mine);
    name_in_list(g_raw, rl_client_id(named), label, sizeof label);
    CHECK_MSG(strcmp(label, "billing-worker/7") == 0, "%s", label);
    /* Reconnected (killed): named again by the new handshake. */
    CHECK(raw_int(g_raw, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
    sleep_ms(50);
    CHECK_OK(rl_lock_release(b, 1, err));
    name_in_list(g_raw, rl_client_id(named), label, sizeof label);
    CHECK_MSG(strcmp(label, "billing-worker/7") == 0, "%s", label);
    CHECK_OK(rl_lock_release(a, 1, err));
    rl_lock_free(a);
    rl_lock_free(b);
    rl_client_free(plain);
    rl_client_free(named);
}

TEST(names_inspect_shows_holders_and_waiters) {
    rl_client *holder = named_client(g_server.url, "holder-a"), *me = new_client(g_server.url, 0);
    CHECK(holder != NULL);
    rl_lock *fair = new_kind(holder, RL_LOCK_FAIR, "nq");
    CHECK_OK(rl_lock_acquire(fair, 1, 30000, 0, NULL, NULL, err));
    crowd w;
    crowd_start(&w, 2, RL_LOCK_FAIR, "nq", 20000, 1, 100);
    rl_inspection *in = NULL;
    for (int64_t until = now_ms() + 3000; now_ms() < until; sleep_ms(20)) {
        CHECK_OK(rl_inspect(me, "nq", 2, &in, err));
        if (in->n_queue == 2) break;
        rl_inspection_free(in);
        in = NULL;
    }
    CHECK(in != NULL);
    char mine[128];
    host_and_pid(mine, sizeof mine);
    CHECK_INT(in->n_owners, 1);
    CHECK_MSG(strcmp(in->owners[0].name, "holder-a") == 0, "%s", in->owners[0].name);
    for (size_t i = 0; i < 2; i++)
        CHECK_MSG(strcmp(in->queue[i].name, mine) == 0, "%s", in->queue[i].name);
    rl_inspection_free(in);
    CHECK_OK(rl_lock_release(fair, 1, err));
    crowd_end(&w);
    /* A holder whose connections are gone (or a Redisson one) has no name: "" */
    raw_int(g_raw, "HSET ghost 00000000-0000-0000-0000-000000000000:1 1");
    CHECK_OK(rl_inspect(me, "ghost", 5, &in, err));
    CHECK_INT(in->n_owners, 1);
    CHECK(strcmp(in->owners[0].client_id, "00000000-0000-0000-0000-000000000000") == 0);
    CHECK(in->owners[0].name[0] == '\0');
    rl_inspection_free(in);
    rl_lock_free(fair);
    rl_client_free(holder);
    rl_client_free(me);
}

TEST(names_bad_client_name_is_refused) {
    static const struct {
        const char *name, *message;
    } cases[] = {
        {"", "client_name must be 1 to 64 characters long"},
        {"two words", "client_name must be printable ASCII without spaces (as Redis takes in a "
                      "client name): character 4 is not"},
        {"tab\there", "client_name must be printable ASCII without spaces (as Redis takes in a "
                      "client name): character 4 is not"},
        {"caf\xc3\xa9", "client_name must be printable ASCII without spaces (as Redis takes in a "
                        "client name): character 4 is not"},
        {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", /* 65 */
         "client_name must be 1 to 64 characters long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rl_options o;
        rl_options_init(&o);
        o.client_name = cases[i].name;
        rl_client *c = NULL;
        rl_error e;
        CHECK_INT(rl_client_new(g_server.url, &o, &c, &e), RL_ERR_ARGUMENT);
        CHECK_MSG(strcmp(e.message, cases[i].message) == 0, "%s: %s", cases[i].name, e.message);
    }
    const rl_option_info *row = rl_option_find("client_name", 11);
    CHECK(row != NULL && row->kind == RL_OPTION_TEXT && !(row->flags & RL_OPTION_INTERNAL));
}

/* A user whose ACL forbids CLIENT: SETNAME and LIST are refused; locks and inspect work. */
TEST(names_a_server_that_refuses_client_leaves_it_working_unnamed) {
    raw_int(g_raw, "ACL SETUSER nocli on >pw ~* &* +@all -client");
    char url[160];
    snprintf(url, sizeof url, "redis://nocli:pw@127.0.0.1:%d", g_server.port);
    rl_client *c = new_client(url, 0);
    rl_lock *l = new_lock(c, "acl");
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    char label[128];
    name_in_list(g_raw, rl_client_id(c), label, sizeof label);
    CHECK_MSG(label[0] == '\0', "%s", label);
    rl_inspection *in;
    CHECK_OK(rl_inspect(c, "acl", 3, &in, err));
    CHECK_INT(in->n_owners, 1);
    CHECK_INT(in->owners[0].count, 1);
    CHECK(in->owners[0].name[0] == '\0');
    rl_inspection_free(in);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    raw_int(g_raw, "ACL DELUSER nocli");
}

TEST(names_found_in_a_client_list) {
    const char *id = "d463333b-7a29-4ef4-baf9-c480cdfc1118";
    const char *list =
        "id=3 addr=127.0.0.1:1 name= age=1 cmd=client|list\n"
        "id=4 addr=127.0.0.1:2 name=redlease:d463333b-7a29-4ef4-baf9-c480cdfc1119:other age=2\n"
        "id=5 addr=127.0.0.1:3 name=redlease:d463333b-7a29-4ef4-baf9-c480cdfc1118:web-1:42 age=3"
        "\n";
    char label[16];
    CHECK_INT(rl_conn_name_find(list, strlen(list), id, label, sizeof label), 1);
    CHECK_MSG(strcmp(label, "web-1:42") == 0, "%s", label);
    CHECK_INT(rl_conn_name_find(list, strlen(list) - 40, id, label, sizeof label), 0);
    CHECK(label[0] == '\0');
    char small[4];
    CHECK_INT(rl_conn_name_find(list, strlen(list), id, small, sizeof small), 1);
    CHECK(strcmp(small, "web") == 0); /* cut to fit */
    CHECK_INT(rl_conn_name_find(list, strlen(list), "", label, sizeof label), 0);
    char name[RL_CONN_NAME_MAX];
    size_t n = rl_conn_name(id, NULL, name);
    CHECK(n == strlen(name) && strncmp(name, "redlease:d463333b-", 18) == 0);
    CHECK(strchr(name, ' ') == NULL);
    CHECK_INT(rl_conn_name(id, "x", name), 9 + 36 + 2);
}

/* A forked child names its connections with its own new id and its own pid. */
TEST(names_a_forked_child_names_itself) {
#ifdef __SANITIZE_THREAD__
    test_skip("ThreadSanitizer does not support threads after a multi-threaded fork");
    return;
#endif
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "parent-first"); /* the parent's connections are open */
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    int ready[2], done[2];
    CHECK(pipe(ready) == 0 && pipe(done) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        rl_lock *own = NULL;
        int rc = rl_lock_new(c, "child-named", 11, &own, NULL) == RL_OK &&
                         rl_lock_acquire(own, 1, 10000, 0, NULL, NULL, NULL) == RL_OK
                     ? 0
                     : 1;
        char id[37];
        snprintf(id, sizeof id, "%s", rl_client_id(c));
        if (write(ready[1], id, sizeof id) != (ssize_t)sizeof id) rc = 2;
        char byte;
        if (read(done[0], &byte, 1) != 1) rc = 3; /* held until the parent has looked */
        _exit(rc);
    }
    char child_id[37] = "";
    CHECK(read(ready[0], child_id, sizeof child_id) == (ssize_t)sizeof child_id);
    rl_inspection *in;
    CHECK_OK(rl_inspect(c, "child-named", 11, &in, err));
    char want[128];
    char host[256] = "";
    gethostname(host, sizeof host);
    host[64] = '\0';
    snprintf(want, sizeof want, "%.64s:%ld", host, (long)pid);
    int ok = in->n_owners == 1 && strcmp(in->owners[0].client_id, child_id) == 0 &&
             strcmp(in->owners[0].name, want) == 0;
    char seen[128];
    snprintf(seen, sizeof seen, "%s", in->n_owners ? in->owners[0].name : "(none)");
    rl_inspection_free(in);
    CHECK(write(done[1], "x", 1) == 1);
    int status = 0;
    waitpid(pid, &status, 0);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", WEXITSTATUS(status));
    CHECK_MSG(ok, "child %s named %s, want %s", child_id, seen, want);
    CHECK(strcmp(child_id, rl_client_id(c)) != 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}
