/* Deferred commands that no exchange carries: an unlock latch's DEL rides in the next write on
 * its connection (no round trip of its own), and when that connection then stays idle, a timer on
 * the client's workers sends it within RL_DEFERRED_IDLE_MS, so a latch never outlives its release
 * by much more than that (docs/protocol.md). The timer ticks every RL_DEFERRED_IDLE_MS while
 * releases keep coming and stops after a quiet second: a release only reads two flags. A
 * one-thread loop of acquires and releases keeps its connection busy and the timer finds nothing
 * to do. */
#ifndef RL_DEFERRED_H
#define RL_DEFERRED_H

struct rl_client;

#define RL_DEFERRED_IDLE_MS 100 /* as the OpenResty backend's latch flush */

/* Sets up the client's timer and makes its pools report connections left with deferred
 * commands (rl_config.on_deferred). */
void rl_deferred_init(struct rl_client *c);

#endif
