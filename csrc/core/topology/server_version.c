#include "server_version.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The value of INFO's `field:` line, copied into out (its size); 0 when the field is absent. */
static int info_field(const redisReply *info, const char *field, char *out, size_t size) {
    size_t n = strlen(field);
    for (const char *p = info->str; p && *p;) {
        if (strncmp(p, field, n) == 0 && p[n] == ':') {
            size_t len = strcspn(p + n + 1, "\r\n");
            if (len >= size) len = size - 1;
            memcpy(out, p + n + 1, len);
            out[len] = '\0';
            return 1;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

rl_status rl_server_has_sharded_pubsub(const redisReply *info, const char *host, int port,
                                       rl_error *err) {
    char version[64];
    if (!info || info->type != REDIS_REPLY_STRING ||
        info_field(info, "valkey_version", version, sizeof version) || /* Valkey: all have it */
        !info_field(info, "redis_version", version, sizeof version) || atoi(version) >= 7)
        return RL_OK;
    return rl_fail(err, RL_ERR_UNSUPPORTED,
                   "%s:%d runs Redis %s, which lacks sharded pub/sub (SSUBSCRIBE, SPUBLISH): "
                   "redlease on a Redis Cluster needs Redis 7.0 or later (or Valkey)",
                   host, port, version);
}
