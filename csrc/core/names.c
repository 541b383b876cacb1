#include "names.h"

#include <stdlib.h>
#include <string.h>

char *rl_name_prefixed(const char *p, const void *name, size_t name_len, size_t extra,
                       size_t *out_len) {
    int tagged = memchr(name, '{', name_len) != NULL;
    size_t plen = strlen(p);
    size_t len = plen + 1 + name_len + (tagged ? 0 : 2);
    char *out = malloc(len + extra + 1);
    if (!out) return NULL;
    char *o = out;
    memcpy(o, p, plen), o += plen;
    *o++ = ':';
    if (!tagged) *o++ = '{';
    memcpy(o, name, name_len), o += name_len;
    if (!tagged) *o++ = '}';
    *o = '\0';
    *out_len = len;
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
