#include "holds.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

uint64_t rl_holds_hash(const void *name, size_t len, rl_lock_kind kind, uint64_t context) {
    const unsigned char *p = name;
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    h ^= context + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

void rl_holds_init(rl_holds *holds, const char *owner_id) {
    memset(holds, 0, sizeof *holds);
    holds->owner_id = owner_id;
}

static size_t decimal_digits(uint64_t v) {
    size_t n = 1;
    while (v >= 10)
        v /= 10, n++;
    return n;
}

size_t rl_hold_owner_len(const rl_holds *holds, const rl_hold *h) {
    if (!rl_hold_is_lock(h)) return h->stored_owner_len;
    return strlen(holds->owner_id) + 1 + decimal_digits(h->context) +
           (h->kind == RL_LOCK_WRITE ? 6 : 0);
}

size_t rl_hold_owner(const rl_holds *holds, const rl_hold *h, char out[RL_OWNER_MAX]) {
    if (!rl_hold_is_lock(h)) {
        memcpy(out, rl_hold_read_keys(h) + h->read_keys_len + 1, h->stored_owner_len + 1);
        return h->stored_owner_len;
    }
    size_t id_len = strlen(holds->owner_id), digits = decimal_digits(h->context);
    char *o = out;
    memcpy(o, holds->owner_id, id_len), o += id_len;
    *o++ = ':';
    uint64_t v = h->context;
    for (size_t i = digits; i-- > 0; v /= 10)
        o[i] = (char)('0' + v % 10);
    o += digits;
    if (h->kind == RL_LOCK_WRITE) memcpy(o, ":write", 6), o += 6;
    *o = '\0';
    return (size_t)(o - out);
}

void rl_holds_clear(rl_holds *holds) {
    for (size_t b = 0; b < holds->nbuckets; b++) {
        rl_hold *h = holds->buckets[b];
        while (h) {
            rl_hold *next = h->bucket_next;
            free(h->retry_id);
            free(h);
            h = next;
        }
    }
    free(holds->buckets);
    rl_holds_init(holds, holds->owner_id);
}

rl_hold *rl_holds_find(const rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                       uint64_t context) {
    if (holds->nbuckets == 0) return NULL;
    uint32_t hash = (uint32_t)rl_holds_hash(name, name_len, kind, context);
    for (rl_hold *h = holds->buckets[hash & (holds->nbuckets - 1)]; h; h = h->bucket_next)
        if (h->hash == hash && h->context == context && h->kind == kind &&
            h->name_len == name_len && memcmp(h->name, name, name_len) == 0)
            return h;
    return NULL;
}

rl_hold *rl_holds_find_owner(const rl_holds *holds, const void *name, size_t name_len,
                             rl_lock_kind kind, uint64_t context, const char *owner) {
    if (holds->nbuckets == 0) return NULL;
    uint32_t hash = (uint32_t)rl_holds_hash(name, name_len, kind, context);
    char held[RL_OWNER_MAX];
    for (rl_hold *h = holds->buckets[hash & (holds->nbuckets - 1)]; h; h = h->bucket_next)
        if (h->hash == hash && h->context == context && h->kind == kind &&
            h->name_len == name_len && memcmp(h->name, name, name_len) == 0) {
            rl_hold_owner(holds, h, held);
            if (strcmp(held, owner) == 0) return h;
        }
    return NULL;
}

static int grow(rl_holds *holds) {
    size_t n = holds->nbuckets ? holds->nbuckets * 2 : 64;
    rl_hold **buckets = calloc(n, sizeof *buckets);
    if (!buckets) return -1;
    for (size_t b = 0; b < holds->nbuckets; b++) {
        rl_hold *h = holds->buckets[b];
        while (h) {
            rl_hold *next = h->bucket_next;
            h->bucket_next = buckets[h->hash & (n - 1)];
            buckets[h->hash & (n - 1)] = h;
            h = next;
        }
    }
    free(holds->buckets);
    holds->buckets = buckets;
    holds->nbuckets = n;
    return 0;
}

rl_hold *rl_holds_add(rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                      uint64_t context, const char *owner, const char *read_keys,
                      size_t read_keys_len) {
    if (!read_keys) read_keys_len = 0;
    size_t owner_len = owner && !rl_is_lock_kind(kind) ? strlen(owner) : 0;
    if (name_len > UINT32_MAX || read_keys_len > UINT32_MAX || owner_len >= RL_OWNER_MAX)
        return NULL;
    if (holds->count + 1 > holds->nbuckets && grow(holds) != 0) return NULL;
    /* One block: the hold, its name, its read-hold key prefix, then a stored owner; from where
     * the name starts (the struct's tail padding would cost a million holds 4 MB). */
    rl_hold *h =
        calloc(1, offsetof(rl_hold, name) + name_len + 1 + read_keys_len + 1 + owner_len + 1);
    if (!h) return NULL;
    h->hash = (uint32_t)rl_holds_hash(name, name_len, kind, context);
    h->context = context;
    h->kind = (uint8_t)kind;
    h->name_len = (uint32_t)name_len;
    memcpy(h->name, name, name_len);
    char *keys = h->name + name_len + 1;
    if (read_keys_len) memcpy(keys, read_keys, read_keys_len);
    h->read_keys_len = (uint32_t)read_keys_len;
    memcpy(keys + read_keys_len + 1, owner_len ? owner : "", owner_len + 1);
    h->stored_owner_len = (uint8_t)owner_len;
    rl_hold **bucket = &holds->buckets[h->hash & (holds->nbuckets - 1)];
    h->bucket_next = *bucket;
    *bucket = h;
    holds->count++;
    if (rl_hold_is_lock(h)) holds->locks++;
    return h;
}

void rl_holds_remove(rl_holds *holds, rl_hold *hold) {
    rl_holds_unwatch(holds, hold);
    rl_hold **p = &holds->buckets[hold->hash & (holds->nbuckets - 1)];
    while (*p != hold)
        p = &(*p)->bucket_next;
    *p = hold->bucket_next;
    holds->count--;
    if (rl_hold_is_lock(hold)) holds->locks--;
    if (hold->in_doubt) holds->in_doubt--;
    free(hold->retry_id);
    free(hold);
}

void rl_holds_watch(rl_holds *holds, rl_hold *hold) {
    if (hold->watched) return;
    hold->watched = 1;
    hold->watch_prev = NULL;
    hold->watch_next = holds->watch_head;
    if (holds->watch_head) holds->watch_head->watch_prev = hold;
    holds->watch_head = hold;
    holds->watched++;
}

void rl_holds_unwatch(rl_holds *holds, rl_hold *hold) {
    if (!hold->watched) return;
    if (hold->watch_prev)
        hold->watch_prev->watch_next = hold->watch_next;
    else
        holds->watch_head = hold->watch_next;
    if (hold->watch_next) hold->watch_next->watch_prev = hold->watch_prev;
    hold->watched = 0;
    hold->watch_prev = hold->watch_next = NULL;
    holds->watched--;
}
