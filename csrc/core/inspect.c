/* rl_inspect: what a key holds, read in Redisson's layouts (docs/protocol.md) and decoded for a
 * person or a script: the kind, every owner field as client id + context with its count and
 * lease, the fair queue with each waiter's time left, the readers of a read/write lock, the last
 * fencing token, a semaphore's or latch's count, the subscribers on the unlock channel, and the
 * names of the holders' and waiters' clients. Read-only: two round trips (three for a read/write
 * lock's readers), and CLIENT LIST when someone holds or waits (holder_names.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "clock.h"
#include "error.h"
#include "fork.h"
#include "holder_names.h"
#include "kind.h"
#include "names.h"

#define MAX_FIELDS 1000    /* a hash with more fields is not a lock */
#define MAX_QUEUE 1000     /* fair waiters shown */
#define MAX_READ_HOLDS 100 /* hold keys read per reader */

const char *rl_key_kind_name(rl_key_kind kind) {
    static const char *const names[] = {"none",       "reentrant", "fenced", "fair",
                                        "read_write", "counter",   "other"};
    return (int)kind >= 0 && kind <= RL_KEY_OTHER ? names[kind] : "other";
}

void rl_inspection_free(rl_inspection *in) {
    if (!in) return;
    free(in->owners);
    free(in->queue);
    free(in);
}

/* The derived names of one lock name. */
typedef struct names {
    char *token, *queue, *deadlines, *lock_channel, *rw_channel, *sem_channel, *latch_channel;
    size_t token_len, queue_len, deadlines_len, lock_channel_len, rw_channel_len, sem_channel_len,
        latch_channel_len;
} names;

static int make_names(rl_batch *b, names *n, const char *name, size_t len) {
    n->token =
        rl_batch_own(b, rl_name_prefixed("redisson_lock_token", name, len, 0, &n->token_len));
    n->queue =
        rl_batch_own(b, rl_name_prefixed("redisson_lock_queue", name, len, 0, &n->queue_len));
    n->deadlines =
        rl_batch_own(b, rl_name_prefixed("redisson_lock_timeout", name, len, 0, &n->deadlines_len));
    n->lock_channel = rl_batch_own(
        b, rl_name_prefixed("redisson_lock__channel", name, len, 0, &n->lock_channel_len));
    n->rw_channel =
        rl_batch_own(b, rl_name_prefixed("redisson_rwlock", name, len, 0, &n->rw_channel_len));
    n->sem_channel =
        rl_batch_own(b, rl_name_prefixed("redisson_sc", name, len, 0, &n->sem_channel_len));
    n->latch_channel = rl_batch_own(b, rl_joined("redisson_countdownlatch__channel__{", 35, name,
                                                 len, "}", &n->latch_channel_len));
    return b->failed ? -1 : 0;
}

/* A decimal integer reply (integer, or a string of digits); 0 when not. */
static int as_int(const redisReply *r, int64_t *out) {
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return 1;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20) return 0;
    char buf[24], *end;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    long long v = strtoll(buf, &end, 10);
    if (*end) return 0;
    *out = v;
    return 1;
}

static void copy_cut(char *dst, size_t size, const char *src, size_t len) {
    if (len >= size) len = size - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static int uuid_shaped(const char *s, size_t len) {
    if (len < 36) return 0;
    for (size_t i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return 0;
    }
    return len == 36 || s[36] == ':';
}

/* "<uuid>:<context>[:write]" into client id and context; *write for the ":write" suffix. */
static void decode_owner(const char *field, size_t len, char *client_id, char *context,
                         int *write) {
    *write = len > 6 && memcmp(field + len - 6, ":write", 6) == 0;
    if (*write) len -= 6;
    if (uuid_shaped(field, len) && len > 37) {
        copy_cut(client_id, 40, field, 36);
        copy_cut(context, RL_TOKEN_MAX, field + 37, len - 37);
    } else {
        client_id[0] = '\0';
        copy_cut(context, RL_TOKEN_MAX, field, len);
    }
}

/* Whether a client of this process holds (name, context) under the owner's client id. */
static int known_here(const char *name, size_t name_len, const rl_owner_info *o) {
    if (!o->client_id[0]) return 0;
    char *end;
    unsigned long long context = strtoull(o->context, &end, 10);
    if (*end) return 0;
    rl_client **clients = NULL;
    size_t n = rl_clients_entered(&clients), found = 0;
    for (size_t i = 0; i < n; i++) {
        rl_client *c = clients[i];
        if (!found && strcmp(c->id, o->client_id) == 0) {
            pthread_mutex_lock(&c->mu);
            for (int kind = RL_LOCK_REENTRANT; kind <= RL_LOCK_WRITE && !found; kind++) {
                rl_hold *h = rl_holds_find(&c->holds, name, name_len, (rl_lock_kind)kind, context);
                found = h && h->count > 0 && !h->lost;
            }
            pthread_mutex_unlock(&c->mu);
        }
        rl_client_leave(c);
    }
    free(clients);
    return found != 0;
}

/* Phase 1's indices. */
enum { Q_TYPE, Q_PTTL, Q_HLEN, Q_TOKEN, Q_QUEUE, Q_VALUE, Q_COUNT };

static rl_status read_owners(rl_inspection *in, const redisReply *all, rl_error *err) {
    size_t n = all->elements / 2;
    in->owners = n ? calloc(n, sizeof *in->owners) : NULL;
    if (n && !in->owners) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    int shaped = 1;
    for (size_t i = 0; i < n; i++) {
        const redisReply *f = all->element[2 * i], *v = all->element[2 * i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            shaped = 0;
            continue;
        }
        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            copy_cut(in->mode, sizeof in->mode, v->str, v->len);
            shaped &= strcmp(in->mode, "read") == 0 || strcmp(in->mode, "write") == 0;
            continue;
        }
        rl_owner_info *o = &in->owners[in->n_owners++];
        copy_cut(o->field, sizeof o->field, f->str, f->len);
        decode_owner(f->str, f->len, o->client_id, o->context, &o->write);
        o->lease_ms = in->lease_ms;
        shaped &= as_int(v, &o->count) && o->count > 0 && memchr(f->str, ':', f->len) != NULL;
    }
    if (!shaped) in->kind = RL_KEY_OTHER;
    return RL_OK;
}

/* Read/write: each reader's lease is its longest hold key's (a third round trip). */
static rl_status read_readers(rl_client *c, rl_inspection *in, const char *name, size_t len,
                              rl_error *err) {
    rl_batch b;
    rl_batch_init(&b);
    int braced = memchr(name, '{', len) != NULL;
    size_t *first = calloc(in->n_owners + 1, sizeof *first);
    if (!first) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    for (size_t i = 0; i < in->n_owners; i++) {
        rl_owner_info *o = &in->owners[i];
        first[i] = b.n;
        for (int64_t k = 1; !o->write && k <= o->count && k <= MAX_READ_HOLDS; k++) {
            char tail[RL_TOKEN_MAX + 48];
            snprintf(tail, sizeof tail, "%s:%s:rwlock_timeout:%lld", braced ? "" : "}", o->field,
                     (long long)k);
            size_t key_len;
            char *key = rl_batch_own(
                &b, rl_joined(braced ? "" : "{", braced ? 0 : 1, name, len, tail, &key_len));
            const char *argv[2] = {"PTTL", key};
            size_t lens[2] = {4, key_len};
            if (key) rl_batch_add(&b, 2, argv, lens);
        }
    }
    first[in->n_owners] = b.n;
    rl_status st = rl_batch_run(&b, c, err);
    for (size_t i = 0; st == RL_OK && i < in->n_owners; i++) {
        if (in->owners[i].write) continue;
        int64_t longest = -2, t;
        for (size_t j = first[i]; j < first[i + 1]; j++)
            if (as_int(rl_batch_reply(&b, j), &t) && t > longest) longest = t;
        in->owners[i].lease_ms = longest;
    }
    free(first);
    rl_batch_free(&b);
    return st;
}

static rl_status inspect(rl_client *c, const char *name, size_t len, rl_inspection *in,
                         rl_error *err) {
    rl_batch b;
    names n;
    rl_batch_init(&b);
    if (make_names(&b, &n, name, len) != 0) {
        rl_batch_free(&b);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    const char *q[Q_COUNT][4] = {{"TYPE", name},
                                 {"PTTL", name},
                                 {"HLEN", name},
                                 {"GET", n.token},
                                 {"LRANGE", n.queue, "0", "999"},
                                 {"GET", name}};
    size_t ql[Q_COUNT][4] = {{4, len}, {4, len}, {4, len}, {3, n.token_len}, {6, n.queue_len, 1, 3},
                             {3, len}};
    int qn[Q_COUNT] = {2, 2, 2, 2, 4, 2};
    for (int i = 0; i < Q_COUNT; i++)
        rl_batch_add(&b, qn[i], q[i], ql[i]);
    rl_status st = rl_batch_run(&b, c, err);
    if (st != RL_OK) {
        rl_batch_free(&b);
        return st;
    }
    const redisReply *type = rl_batch_reply(&b, Q_TYPE), *queue = rl_batch_reply(&b, Q_QUEUE);
    if (type->type == REDIS_REPLY_STATUS || type->type == REDIS_REPLY_STRING)
        copy_cut(in->type, sizeof in->type, type->str, type->len);
    as_int(rl_batch_reply(&b, Q_PTTL), &in->lease_ms);
    as_int(rl_batch_reply(&b, Q_TOKEN), &in->last_token);
    int64_t hlen = 0;
    int is_hash = strcmp(in->type, "hash") == 0;
    if (is_hash) as_int(rl_batch_reply(&b, Q_HLEN), &hlen);
    size_t queued = queue->type == REDIS_REPLY_ARRAY ? queue->elements : 0;

    /* The kind, as far as phase 1 tells it (read_owners may still find the hash not a lock). */
    if (is_hash)
        in->kind = hlen > MAX_FIELDS ? RL_KEY_OTHER
                   : queued          ? RL_KEY_FAIR
                   : in->last_token  ? RL_KEY_FENCED
                                     : RL_KEY_REENTRANT;
    else if (strcmp(in->type, "string") == 0)
        in->kind = as_int(rl_batch_reply(&b, Q_VALUE), &in->count) ? RL_KEY_COUNTER : RL_KEY_OTHER;
    else if (strcmp(in->type, "none") == 0)
        in->kind = queued ? RL_KEY_FAIR : RL_KEY_NONE;
    else
        in->kind = RL_KEY_OTHER;

    /* Phase 2: the fields, the waiters' deadlines, the subscribers. */
    rl_batch b2;
    rl_batch_init(&b2);
    size_t hgetall = SIZE_MAX, scores;
    if (in->kind != RL_KEY_OTHER && is_hash) {
        const char *argv[2] = {"HGETALL", name};
        size_t lens[2] = {7, len};
        hgetall = rl_batch_add(&b2, 2, argv, lens);
    }
    if (in->kind == RL_KEY_FAIR) {
        in->queue = calloc(queued, sizeof *in->queue);
        if (!in->queue) b2.failed = 1;
    }
    scores = b2.n;
    for (size_t i = 0; in->queue && i < queued; i++) {
        const redisReply *w = queue->element[i];
        const char *argv[3] = {"ZSCORE", n.deadlines, w->str};
        size_t lens[3] = {6, n.deadlines_len, w->len};
        rl_batch_add(&b2, 3, argv, lens);
    }
    /* The subscribers of the kind's channel(s), one PUBSUB per channel (on a cluster the
     * channels are sharded, each asked at its slot's node); a fair lock's waiters each listen on
     * their own. */
    const char *channels[2 + MAX_QUEUE];
    size_t channel_lens[2 + MAX_QUEUE];
    size_t nch = 0;
    if (in->kind == RL_KEY_COUNTER) {
        channels[nch] = n.sem_channel, channel_lens[nch++] = n.sem_channel_len;
        channels[nch] = n.latch_channel, channel_lens[nch++] = n.latch_channel_len;
    } else if (in->kind == RL_KEY_REENTRANT || in->kind == RL_KEY_FENCED) {
        channels[nch] = n.lock_channel, channel_lens[nch++] = n.lock_channel_len;
    } else if (in->kind == RL_KEY_FAIR) {
        for (size_t i = 0; i < queued && nch < MAX_QUEUE; i++) {
            const redisReply *w = queue->element[i];
            size_t ch_len;
            char *ch = rl_batch_own(
                &b2, rl_joined(n.lock_channel, n.lock_channel_len, ":", 1, w->str, &ch_len));
            if (ch) channels[nch] = ch, channel_lens[nch++] = ch_len;
        }
    }
    /* A hash kind is only known after HGETALL: a read/write lock's channel is asked too (last). */
    int ask_rw = is_hash && in->kind != RL_KEY_OTHER;
    if (ask_rw) channels[nch] = n.rw_channel, channel_lens[nch++] = n.rw_channel_len;
    const char *numsub = c->deploy->numsub;
    size_t numsub_at = b2.n;
    for (size_t i = 0; i < nch; i++) {
        const char *argv[3] = {"PUBSUB", numsub, channels[i]};
        size_t lens[3] = {6, strlen(numsub), channel_lens[i]};
        rl_batch_add(&b2, 3, argv, lens);
    }
    st = rl_batch_run(&b2, c, err);
    int64_t rw_subscribers = 0, now = rl_epoch_ms();
    for (size_t i = 0; st == RL_OK && i < nch; i++) {
        const redisReply *r = rl_batch_reply(&b2, numsub_at + i);
        int64_t k = 0;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) as_int(r->element[1], &k);
        if (ask_rw && i == nch - 1)
            rw_subscribers = k;
        else
            in->subscribers += k;
    }
    if (st == RL_OK && hgetall != SIZE_MAX) {
        const redisReply *all = rl_batch_reply(&b2, hgetall);
        if (all->type == REDIS_REPLY_ARRAY) st = read_owners(in, all, err);
        if (st == RL_OK && in->mode[0] && in->kind != RL_KEY_OTHER) {
            in->kind = RL_KEY_RW;
            in->subscribers = rw_subscribers;
        }
    }
    for (size_t i = 0; st == RL_OK && in->queue && i < queued; i++) {
        rl_waiter_info *w = &in->queue[in->n_queue++];
        const redisReply *e = queue->element[i];
        int write;
        copy_cut(w->owner, sizeof w->owner, e->str, e->len);
        decode_owner(e->str, e->len, w->client_id, w->context, &write);
        const redisReply *s = rl_batch_reply(&b2, scores + i);
        w->timeout_ms = s->type == REDIS_REPLY_STRING ? (int64_t)strtod(s->str, NULL) - now : 0;
        if (w->timeout_ms < 0) w->timeout_ms = 0;
    }
    rl_batch_free(&b2);
    rl_batch_free(&b);
    if (st == RL_OK && in->kind == RL_KEY_RW) st = read_readers(c, in, name, len, err);
    for (size_t i = 0; st == RL_OK && i < in->n_owners; i++)
        in->owners[i].local = known_here(name, len, &in->owners[i]);
    if (st == RL_OK) rl_holder_names(c, name, len, in);
    return st;
}

rl_status rl_inspect(rl_client *c, const void *name, size_t name_len, rl_inspection **out,
                     rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!name || name_len == 0) return rl_fail(err, RL_ERR_ARGUMENT, "a name must not be empty");
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    rl_inspection *in = calloc(1, sizeof *in);
    if (!in) {
        rl_client_leave(c);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    in->lease_ms = -2;
    st = inspect(c, name, name_len, in, err);
    rl_client_leave(c);
    if (st != RL_OK) {
        rl_inspection_free(in);
        return st;
    }
    *out = in;
    return RL_OK;
}
