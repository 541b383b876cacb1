#include "wake_grace.h"

#include "holds.h"

void rl_handovers_note(rl_handovers *h, const void *name, size_t len, rl_lock_kind kind,
                       int64_t until_ms, uint64_t messages_floor) {
    unsigned slot = h->next++ % RL_HANDOVERS;
    h->recent[slot].hash = rl_holds_hash(name, len, kind, 0);
    h->recent[slot].until_ms = until_ms;
    h->recent[slot].messages_floor = messages_floor;
}

/* A hash collision only makes one acquire yield needlessly for at most the grace. */
int64_t rl_handovers_until(const rl_handovers *h, const void *name, size_t len, rl_lock_kind kind,
                           int64_t now_ms, uint64_t *messages_floor) {
    uint64_t hash = rl_holds_hash(name, len, kind, 0);
    for (unsigned i = 0; i < RL_HANDOVERS; i++)
        if (h->recent[i].hash == hash && h->recent[i].until_ms > now_ms) {
            *messages_floor = h->recent[i].messages_floor;
            return h->recent[i].until_ms;
        }
    return -1;
}
