/* Random identifiers: the client UUID and unlock request ids. */
#ifndef RL_RANDOM_H
#define RL_RANDOM_H

#include <stddef.h>

/* Writes a random version-4 UUID, lowercase, 36 chars plus NUL, into out[37]. */
void rl_random_uuid(char out[37]);

/* Writes 2*nbytes random lowercase hex chars plus NUL. */
void rl_random_hex(char *out, size_t nbytes);

#endif
