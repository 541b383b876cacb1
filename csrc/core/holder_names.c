#include "holder_names.h"

#include "conn_name.h"
#include "error.h"

typedef struct list_call {
    rl_client *c;
    redisReply *reply;
} list_call;

/* CLIENT LIST on a connection of the pool the deployment chose for the lock's key. */
static rl_status run_list(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                          int *repeatable, rl_error *err) {
    (void)asking, (void)redirect; /* not keyed: the server's list, whatever the slot's state */
    static const char *argv[2] = {"CLIENT", "LIST"};
    static size_t lens[2] = {6, 4};
    static const rl_cmd list = {2, argv, lens};
    list_call *call = arg;
    *repeatable = 1; /* read-only */
    rl_conn *conn = rl_pool_take(pool);
    if (!conn) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    rl_status st = rl_conn_exchange(conn, call->c->cfg.options.command_timeout_ms, 1, &list,
                                    &call->reply, 1, err);
    rl_pool_give(pool, conn);
    return st;
}

void rl_holder_names(rl_client *c, const char *name, size_t len, rl_inspection *in) {
    int wanted = 0;
    for (size_t i = 0; i < in->n_owners; i++)
        wanted |= in->owners[i].client_id[0] != '\0';
    for (size_t i = 0; i < in->n_queue; i++)
        wanted |= in->queue[i].client_id[0] != '\0';
    if (!wanted) return;
    /* Routed as a command on `name` (argv[2]) is: to the server that holds the lock, where
     * every holder and waiter has a connection; only CLIENT LIST itself is sent. */
    const char *argv[3] = {"CLIENT", "LIST", name};
    size_t lens[3] = {6, 4, len};
    rl_cmd routed = {3, argv, lens};
    list_call call = {c, NULL};
    rl_error ignored;
    rl_status st = c->deploy->call(c, &routed, 2, run_list, &call, &ignored);
    const redisReply *r = call.reply;
    if (st == RL_OK && r && r->type == REDIS_REPLY_STRING) {
        for (size_t i = 0; i < in->n_owners; i++)
            rl_conn_name_find(r->str, r->len, in->owners[i].client_id, in->owners[i].name,
                              sizeof in->owners[i].name);
        for (size_t i = 0; i < in->n_queue; i++)
            rl_conn_name_find(r->str, r->len, in->queue[i].client_id, in->queue[i].name,
                              sizeof in->queue[i].name);
    }
    if (call.reply) freeReplyObject(call.reply);
}
