/* Redis Cluster's key → slot rule: CRC16 (XMODEM) of the key, or of its hash tag (the bytes
 * between the first '{' and the first '}' after it, when not empty), modulo 16384. */
#ifndef RL_SLOTS_H
#define RL_SLOTS_H

#include <stddef.h>

#define RL_SLOTS 16384

int rl_key_slot(const void *key, size_t len);

#endif
