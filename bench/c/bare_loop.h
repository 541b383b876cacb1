/* The limits of measure 1, as a small library: one bare hiredis connection that runs PING round
 * trips, or redlease's own acquire and release scripts (texts from the core, rl_script_text)
 * back to back, with nothing of redlease around them. Linked into bench_limits and bench_core,
 * and built as build/bench_bare.so for the Python benchmarks (ctypes), so that every row of
 * measure 1 can alternate short bursts with the limit it is compared with. */
#ifndef BENCH_BARE_LOOP_H
#define BENCH_BARE_LOOP_H

typedef struct bl_conn bl_conn;

bl_conn *bl_open(const char *url);    /* NULL when it cannot connect or load the scripts */
double bl_ping(bl_conn *c, int n);    /* PING round trips per second over n */
double bl_scripts(bl_conn *c, int n); /* acquire+release cycles per second over n */
/* Acquire round trips per second over n cycles (a free lock each time; the releases untimed). */
double bl_acquire(bl_conn *c, int n);
const char *bl_sha(bl_conn *c, int release); /* the loaded script's SHA1 (acquire or release) */
void bl_close(bl_conn *c);

#endif
