#include "validity.h"

#include <stdio.h>

#include "client.h"
#include "clock.h"
#include "names.h"

int64_t rl_hold_lease(const rl_client *c, const rl_hold *h) {
    return h->watchdog ? c->cfg.options.watchdog_timeout_ms : h->lease_ms;
}

static int64_t margin(const rl_client *c, int64_t lease) {
    return lease * c->cfg.options.drift_factor_ppm / 1000000 + RL_DRIFT_FIXED_MS;
}

static void report(rl_client *c, rl_hold *h, rl_event_kind kind, const char *what) {
    char message[320], shown[RL_NAME_SHOWN_MAX];
    snprintf(message, sizeof message, "lock \"%s\" %s", rl_name_shown(h->name, h->name_len, shown),
             what);
    rl_events_push(&c->events, kind, h->name, h->name_len, h->context, RL_LOST_NONE, 1, message);
}

void rl_hold_confirmed(rl_client *c, rl_hold *h, int64_t sent_at, int64_t lease) {
    h->confirmed_until = sent_at + lease;
    if (h->in_doubt && !h->lost) {
        h->in_doubt = 0;
        c->holds.in_doubt--;
        report(c, h, RL_EVENT_CONFIRMED, "held again: Redis confirmed its lease");
    }
}

void rl_hold_doubted(rl_client *c, rl_hold *h, const char *why) {
    if (h->in_doubt || h->lost) return;
    h->in_doubt = 1;
    c->holds.in_doubt++;
    c->holds.doubted++;
    char what[280];
    int64_t left = h->confirmed_until - margin(c, rl_hold_lease(c, h)) - rl_now_ms();
    snprintf(what, sizeof what, "in doubt (%s): guaranteed for %lld ms more at most", why,
             (long long)(left > 0 ? left : 0));
    report(c, h, RL_EVENT_IN_DOUBT, what);
}

rl_hold_state rl_hold_state_at(const rl_client *c, const rl_hold *h, int64_t now,
                               int64_t *valid_until) {
    *valid_until = 0;
    if (!h || h->count <= 0) return RL_HOLD_NONE;
    if (h->lost || now >= h->confirmed_until) return RL_HOLD_LOST;
    int64_t lease = rl_hold_lease(c, h);
    int64_t until = h->confirmed_until - margin(c, lease);
    if (now >= until) return RL_HOLD_IN_DOUBT; /* within the drift margin of the lease's end */
    *valid_until = until;
    if (h->in_doubt) return RL_HOLD_IN_DOUBT;
    /* A watchdog hold is renewed every third of its lease: one whose renewal is half a period
     * late is in doubt before any round fails (a slow server, a stalled process). */
    if (h->watchdog && h->watched && h->confirmed_until - now < lease / 2) return RL_HOLD_IN_DOUBT;
    return RL_HOLD_HELD;
}
