/* How long a hold still excludes everyone else, as its holder can tell from its own clock, and
 * the hold's state: held, in doubt (a renewal failed or is overdue: the lease may still be valid,
 * but the holder cannot be sure), lost.
 *
 * A hold is guaranteed until the moment its last confirmed acquire or renewal was *sent* plus the
 * lease, less a margin for the drift between this host's clock and Redis's: lease × drift_factor
 * + RL_DRIFT_FIXED_MS. Sent, not answered: Redis started the lease at some point after that. */
#ifndef RL_VALIDITY_H
#define RL_VALIDITY_H

#include <stdint.h>

#include "holds.h"

struct rl_client;

#define RL_DRIFT_FIXED_MS 2

/* The lease the hold is kept with: the watchdog's, or its fixed one. */
int64_t rl_hold_lease(const struct rl_client *c, const rl_hold *h);

/* Redis confirmed the hold with a call sent at `sent_at` for `lease` ms (client mutex held). A
 * hold that was in doubt is held again, reported as an RL_EVENT_CONFIRMED event. */
void rl_hold_confirmed(struct rl_client *c, rl_hold *h, int64_t sent_at, int64_t lease);

/* A renewal of the hold failed; it stays held in Redis until its confirmed lease ends, unless
 * someone deletes it (client mutex held). Reported once, as an RL_EVENT_IN_DOUBT event. */
void rl_hold_doubted(struct rl_client *c, rl_hold *h, const char *why);

/* The hold's state at `now` and, while held or in doubt, the monotonic ms until which it is
 * guaranteed (else 0). Client mutex held. */
rl_hold_state rl_hold_state_at(const struct rl_client *c, const rl_hold *h, int64_t now,
                               int64_t *valid_until);

#endif
