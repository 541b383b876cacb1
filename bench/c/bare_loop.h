/* The wire's limits, as a small library: one bare hiredis connection that runs PING round
 * trips, or redlease's own acquire and release scripts (texts from the core, rl_script_text)
 * back to back, with nothing of redlease around them (measure 1), and the bare hand-off
 * (measure 2). Linked into bench_limits and bench_core, and built as build/bench_bare.so for
 * the Python benchmarks (ctypes), so that every row of measure 1 can alternate short bursts
 * with the limit it is compared with. */
#ifndef BENCH_BARE_LOOP_H
#define BENCH_BARE_LOOP_H

typedef struct bl_conn bl_conn;

bl_conn *bl_open(const char *url);    /* NULL when it cannot connect or load the scripts */
double bl_ping(bl_conn *c, int n);    /* PING round trips per second over n */
double bl_scripts(bl_conn *c, int n); /* acquire+release cycles per second over n */
/* Acquire round trips per second over n cycles (a free lock each time; the releases untimed). */
double bl_acquire(bl_conn *c, int n);
const char *bl_sha(bl_conn *c, int release); /* the loaded script's SHA1 (acquire or release) */
/* The hand-off with nothing of a client around it: one thread, two holders' connections and a
 * subscribed one. Each of n rounds: the holder sends its release, the subscribed connection
 * reads the release's message, the other holder's acquire comes back granted; then the
 * release's own answer is read. Fills ms[0..n-1] with each round's time from the release's send
 * to the acquire's answer; 0, or -1 on failure. */
int bl_handoff(const char *url, int n, double *ms);
/* The same hand-off with the waiter in a process of its own (forked), asleep in its read until
 * the release's message wakes it, as a waiting client in another process is: each of n rounds,
 * this process acquires, sleeps settle_ms, sends its release; the waiter, woken by the message,
 * acquires, notes the time and releases. Fills ms[0..n-1] with each round's time from the
 * release's send to the waiter's granted acquire; 0, or -1 on failure. */
int bl_handoff_apart(const char *url, int n, double settle_ms, double *ms);
void bl_close(bl_conn *c);

#endif
