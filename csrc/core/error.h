/* Filling rl_error: one place formats every failure the core reports. */
#ifndef RL_ERROR_H
#define RL_ERROR_H

#include "redlease.h"

/* Sets *err (if non-NULL) and returns status, so callers can `return rl_fail(...)`. */
rl_status rl_fail(rl_error *err, rl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* RL_LOST with its reason: "the hold of lock "<name>" was lost<what> (<reason>)". */
rl_status rl_fail_lost(rl_error *err, rl_lost_reason reason, const char *what, const char *name);

/* A message that quotes an rl_error's message whole, with room for the words around it (an
 * event's text, say): a failure's reason is never cut. */
#define RL_ERROR_MESSAGE_SIZE sizeof(((rl_error *)0)->message)
#define RL_QUOTING_MESSAGE_SIZE (RL_ERROR_MESSAGE_SIZE + 256)

/* The words for how long a wait that ran out waited: "within 1.500 s" (as Python words it), or
 * `at_once` for a one-try (wait_ms 0). Written into out (RL_WAITED_SIZE bytes). */
#define RL_WAITED_SIZE 48
const char *rl_waited(int64_t wait_ms, const char *at_once, char *out);

/* Clears *err to RL_OK with an empty message. */
void rl_error_clear(rl_error *err);

/* The text of an errno value in buf (or a static string): strerror_r returns it with glibc's
 * _GNU_SOURCE and writes buf with musl's and the POSIX one. */
const char *rl_errno_text(int error, char *buf, size_t len);

#endif
