#include "names.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "slots.h"

size_t rl_name_prefixed_len(const char *p, const void *name, size_t name_len) {
    int tagged = memchr(name, '{', name_len) != NULL;
    return strlen(p) + 1 + name_len + (tagged ? 0 : 2);
}

size_t rl_name_prefixed_into(const char *p, const void *name, size_t name_len, char *out) {
    int tagged = memchr(name, '{', name_len) != NULL;
    size_t plen = strlen(p);
    char *o = out;
    memcpy(o, p, plen), o += plen;
    *o++ = ':';
    if (!tagged) *o++ = '{';
    memcpy(o, name, name_len), o += name_len;
    if (!tagged) *o++ = '}';
    *o = '\0';
    return (size_t)(o - out);
}

char *rl_name_prefixed(const char *p, const void *name, size_t name_len, size_t extra,
                       size_t *out_len) {
    size_t len = rl_name_prefixed_len(p, name, name_len);
    char *out = malloc(len + extra + 1);
    if (!out) return NULL;
    *out_len = rl_name_prefixed_into(p, name, name_len, out);
    return out;
}

const char *rl_name_shown(const void *name, size_t name_len, char out[RL_NAME_SHOWN_MAX]) {
    const unsigned char *bytes = name;
    size_t n = name_len < 60 ? name_len : 60;
    for (size_t i = 0; i < n; i++)
        out[i] = bytes[i] >= 32 && bytes[i] < 127 ? (char)bytes[i] : '?';
    strcpy(out + n, name_len > 60 ? "..." : "");
    return out;
}

int rl_name_fits_one_slot(const void *name, size_t name_len) {
    size_t len;
    char *channel = rl_name_prefixed("redisson_lock__channel", name, name_len, 0, &len);
    if (!channel) return 1; /* out of memory: the call itself will say so */
    int same = rl_key_slot(channel, len) == rl_key_slot(name, name_len);
    free(channel);
    return same;
}

rl_status rl_name_check_cluster(const void *name, size_t name_len, const char *what,
                                rl_error *err) {
    if (rl_name_fits_one_slot(name, name_len)) return RL_OK;
    char shown[RL_NAME_SHOWN_MAX];
    return rl_fail(err, RL_ERR_ARGUMENT,
                   "the %s name \"%s\" cannot be used on a Redis Cluster: its keys would fall in "
                   "different slots (a '}' with no '{' before it, or empty braces first)",
                   what, rl_name_shown(name, name_len, shown));
}
