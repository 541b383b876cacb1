#include "redirect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int starts(const redisReply *r, const char *word) {
    size_t n = strlen(word);
    return r->len >= n && memcmp(r->str, word, n) == 0 && (r->len == n || r->str[n] == ' ');
}

/* "MOVED <slot> <host>:<port>" (the host may be an IPv6 address: the port follows the last ':').
 * An empty host (Redis 7 with cluster-preferred-endpoint-type unknown-endpoint) means the node
 * that answered: out->host stays empty for the caller to fill in. */
static rl_redirect_kind parse_target(const redisReply *r, size_t skip, rl_redirect_kind kind,
                                     rl_redirect *out) {
    char text[320];
    if (r->len <= skip) return RL_REDIRECT_NONE; /* "MOVED" alone */
    size_t n = r->len < sizeof text - 1 ? r->len : sizeof text - 1;
    memcpy(text, r->str, n);
    text[n] = '\0';
    char *slot_end, *p = text + skip;
    long slot = strtol(p, &slot_end, 10);
    if (slot_end == p || *slot_end != ' ' || slot < 0 || slot > 16383) return RL_REDIRECT_NONE;
    char *hostport = slot_end + 1, *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof out->host) return RL_REDIRECT_NONE;
    long port = strtol(colon + 1, NULL, 10);
    if (port <= 0 || port > 65535) return RL_REDIRECT_NONE;
    memcpy(out->host, hostport, (size_t)(colon - hostport));
    out->host[colon - hostport] = '\0';
    out->port = (int)port;
    out->slot = (int)slot;
    out->kind = kind;
    return kind;
}

rl_redirect_kind rl_redirect_parse(const redisReply *r, rl_redirect *out) {
    memset(out, 0, sizeof *out);
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str) return RL_REDIRECT_NONE;
    if (starts(r, "MOVED")) return parse_target(r, 6, RL_REDIRECT_MOVED, out);
    if (starts(r, "ASK")) return parse_target(r, 4, RL_REDIRECT_ASK, out);
    if (starts(r, "TRYAGAIN")) return out->kind = RL_REDIRECT_TRYAGAIN;
    if (starts(r, "CLUSTERDOWN")) return out->kind = RL_REDIRECT_CLUSTERDOWN;
    return RL_REDIRECT_NONE;
}
