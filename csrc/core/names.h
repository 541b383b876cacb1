/* Redis key and channel names derived from a lock name, exactly as docs/protocol.md (and Redisson)
 * spell them. */
#ifndef RL_NAMES_H
#define RL_NAMES_H

#include <stddef.h>

#include "redlease.h"

/* prefix(p, name): name has '{' ? p + ":" + name : p + ":{" + name + "}". Returns a malloc'd
 * buffer (NUL-terminated for convenience) with room for `extra` more bytes, or NULL. */
char *rl_name_prefixed(const char *p, const void *name, size_t name_len, size_t extra,
                       size_t *out_len);
/* The same without allocating: its length (without the NUL), and written into `out` (which
 * needs that + 1 bytes; NUL-terminated), returning the length. */
size_t rl_name_prefixed_len(const char *p, const void *name, size_t name_len);
size_t rl_name_prefixed_into(const char *p, const void *name, size_t name_len, char *out);

/* On a Redis Cluster, whether the keys prefix() derives from `name` share its slot, as a lock's
 * scripts need. Not so for a name with a '}' but no '{' ("a}b": the derived tag becomes "{a}") or
 * whose first braces are empty ("x{}y": Redis then hashes each whole key); Redisson fails on them
 * too (CROSSSLOT). */
int rl_name_fits_one_slot(const void *name, size_t name_len);
/* Fails with RL_ERR_ARGUMENT (`what`: "lock", "semaphore", ...) unless it fits one slot. */
rl_status rl_name_check_cluster(const void *name, size_t name_len, const char *what, rl_error *err);

/* A lock name for messages: at most 60 bytes, printable ASCII kept, any other byte as '?', "..."
 * when cut. `out` needs RL_NAME_SHOWN_MAX bytes. Returns out. */
#define RL_NAME_SHOWN_MAX 64
const char *rl_name_shown(const void *name, size_t name_len, char out[RL_NAME_SHOWN_MAX]);

#endif
