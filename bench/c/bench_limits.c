/* The limits beside measure 1, on their own: PING round trips per second on one connection (a
 * cycle costs at least two), and redlease's acquire and release scripts issued back to back by a
 * bare hiredis loop (bare_loop.c). Also leaves both scripts loaded and prints their SHA1s, for
 * redis-benchmark. Prints one JSON object. Usage: bench_limits REDIS_URL [cycles] [ping|scripts]
 * With a third argument, runs that loop alone (cycles PINGs, or cycles script pairs), without a
 * warm-up, and prints nothing: the bare rows of the profile (perf stat around it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bare_loop.h"

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    bl_conn *c = url && n > 0 ? bl_open(url) : NULL;
    if (!c) {
        fprintf(stderr, "usage: bench_limits REDIS_URL [cycles] (and a reachable server)\n");
        return 1;
    }
    if (argc > 3) {
        double rate = strcmp(argv[3], "ping") == 0      ? bl_ping(c, n)
                      : strcmp(argv[3], "scripts") == 0 ? bl_scripts(c, n)
                                                        : -1;
        bl_close(c);
        return rate > 0 ? 0 : 1;
    }
    bl_ping(c, n / 10 + 1); /* warm up */
    bl_scripts(c, n / 10 + 1);
    double ping = bl_ping(c, n), scripts = bl_scripts(c, n);
    if (ping <= 0 || scripts <= 0) return 1;
    printf("{\"measure\": \"limits\", \"cycles\": %d, \"acquire_sha\": \"%s\", "
           "\"release_sha\": \"%s\", \"rows\": [\n"
           "  {\"impl\": \"ping\", \"label\": \"two PING round trips (hiredis)\", "
           "\"ping_per_s\": %.1f, \"cycles_per_s\": %.1f},\n"
           "  {\"impl\": \"bare-scripts\", \"label\": \"acquire + release scripts, bare hiredis "
           "loop\", \"cycles_per_s\": %.1f}\n]}\n",
           n, bl_sha(c, 0), bl_sha(c, 1), ping, ping / 2, scripts);
    bl_close(c);
    return 0;
}
