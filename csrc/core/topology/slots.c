#include "slots.h"

#include <stdint.h>
#include <string.h>

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as Redis Cluster computes it. */
static uint16_t crc16(const unsigned char *p, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

int rl_key_slot(const void *key, size_t len) {
    const unsigned char *k = key;
    const unsigned char *open = memchr(k, '{', len);
    if (open) {
        size_t after = (size_t)(open - k) + 1;
        const unsigned char *close = memchr(open + 1, '}', len - after);
        if (close && close > open + 1) { /* an empty tag "{}" does not count */
            k = open + 1;
            len = (size_t)(close - k);
        }
    }
    return crc16(k, len) & (RL_SLOTS - 1);
}
