/* Redis Cluster's answers that send a command elsewhere or ask to wait: MOVED and ASK (another
 * node serves the slot), TRYAGAIN (a slot in migration, keys split) and CLUSTERDOWN. */
#ifndef RL_REDIRECT_H
#define RL_REDIRECT_H

#include <hiredis/hiredis.h>

typedef enum rl_redirect_kind {
    RL_REDIRECT_NONE = 0,
    RL_REDIRECT_MOVED,
    RL_REDIRECT_ASK,
    RL_REDIRECT_TRYAGAIN,
    RL_REDIRECT_CLUSTERDOWN
} rl_redirect_kind;

typedef struct rl_redirect {
    rl_redirect_kind kind;
    int slot;       /* MOVED, ASK */
    char host[256]; /* empty: the node that answered (Redis 7's unknown-endpoint) */
    int port;
} rl_redirect;

/* Reads an error reply; RL_REDIRECT_NONE (and *out cleared) for any other reply. */
rl_redirect_kind rl_redirect_parse(const redisReply *reply, rl_redirect *out);

#endif
