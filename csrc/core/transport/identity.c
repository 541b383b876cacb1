#include "identity.h"

#include <string.h>

static const char *identity_argv[2] = {"INFO", "replication"};
static size_t identity_lens[2] = {4, 11};
const rl_cmd rl_identity_cmd = {2, identity_argv, identity_lens};

uint32_t rl_identity_of(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_STRING) return 0;
    static const char field[] = "master_replid:";
    const char *at = r->str;
    const char *end = r->str + r->len;
    /* The field at the start of a line ("master_replid2:" is another one). */
    while (at && at < end) {
        if ((size_t)(end - at) > sizeof field - 1 && memcmp(at, field, sizeof field - 1) == 0) {
            uint32_t h = 2166136261u; /* FNV-1a over the id's text */
            for (const char *p = at + sizeof field - 1; p < end && *p != '\r' && *p != '\n'; p++)
                h = (h ^ (uint8_t)*p) * 16777619u;
            return h ? h : 1;
        }
        at = memchr(at, '\n', (size_t)(end - at));
        if (at) at++;
    }
    return 0;
}
