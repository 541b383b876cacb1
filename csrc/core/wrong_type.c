/* A script refused with WRONGTYPE: Redis names only the script's SHA and line, which tell the user
 * nothing. Asked once more (TYPE of the script's keys, on the same connection), the answer names
 * the user's key, what it holds and what redlease wanted it for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "names.h"
#include "scripts.h"

#define MAX_KEYS 8

/* Redis's own refusal; a script's own WRONGTYPE answer (fencing.c's) already says what it is. */
int rl_reply_is_wrong_type(const redisReply *r) {
    static const char own[] = "WRONGTYPE Operation against a key";
    return r && r->type == REDIS_REPLY_ERROR && r->len >= sizeof own - 1 &&
           memcmp(r->str, own, sizeof own - 1) == 0;
}

/* What the script's first key is to redlease, and the type it keeps there. */
static const char *used_for(rl_script_id id, const char **expected) {
    if (id >= RL_SCRIPT_SEM_TRY_SET && id <= RL_SCRIPT_SEM_DRAIN) {
        *expected = "string";
        return "a semaphore";
    }
    if (id >= RL_SCRIPT_PERMIT_ACQUIRE && id <= RL_SCRIPT_PERMIT_ADD) {
        *expected = "string";
        return "a permit-expirable semaphore";
    }
    if (id >= RL_SCRIPT_LATCH_TRY_SET && id <= RL_SCRIPT_LATCH_DELETE) {
        *expected = "string";
        return "a count-down latch";
    }
    *expected = "hash";
    return "a lock";
}

rl_status rl_fail_wrong_type(rl_error *err, rl_conn *conn, int64_t timeout_ms, rl_script_id id,
                             const rl_cmd *cmd) {
    const char *expected;
    const char *what = used_for(id, &expected);
    char digits[8] = "";
    if (cmd->argc > 2 && cmd->lens[2] < sizeof digits) memcpy(digits, cmd->argv[2], cmd->lens[2]);
    int nkeys = atoi(digits);
    if (nkeys > MAX_KEYS) nkeys = MAX_KEYS;
    if (nkeys > cmd->argc - RL_SCRIPT_ARGV_HEAD) nkeys = cmd->argc - RL_SCRIPT_ARGV_HEAD;
    rl_cmd types[MAX_KEYS];
    const char *argv[MAX_KEYS][2];
    size_t lens[MAX_KEYS][2];
    redisReply *replies[MAX_KEYS] = {NULL};
    for (int i = 0; i < nkeys; i++) {
        argv[i][0] = "TYPE";
        lens[i][0] = 4;
        argv[i][1] = cmd->argv[RL_SCRIPT_ARGV_HEAD + i];
        lens[i][1] = cmd->lens[RL_SCRIPT_ARGV_HEAD + i];
        types[i] = (rl_cmd){2, argv[i], lens[i]};
    }
    /* The key to name: the first one when it holds another type than redlease keeps there, else
     * the first other key that exists (a fair lock's queue, ...), else the first, untyped. */
    int culprit = -1;
    rl_error ignored;
    if (nkeys > 0 &&
        rl_conn_exchange(conn, timeout_ms, (size_t)nkeys, types, replies, 1, &ignored) == RL_OK) {
        for (int i = 0; i < nkeys && culprit < 0; i++) {
            const redisReply *r = replies[i];
            int typed = r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING;
            if (!typed || strcmp(r->str, "none") == 0) continue;
            if (i > 0 || strcmp(r->str, expected) != 0) culprit = i;
        }
    }
    char shown[RL_NAME_SHOWN_MAX], first[RL_NAME_SHOWN_MAX], type[32] = "";
    int key = culprit < 0 ? 0 : culprit;
    if (culprit >= 0) snprintf(type, sizeof type, " (%s)", replies[culprit]->str);
    const char *name = nkeys > 0 ? rl_name_shown(cmd->argv[RL_SCRIPT_ARGV_HEAD + key],
                                                 cmd->lens[RL_SCRIPT_ARGV_HEAD + key], shown)
                                 : "";
    for (int i = 0; i < nkeys; i++)
        freeReplyObject(replies[i]);
    if (culprit > 0)
        return rl_fail(
            err, RL_ERR_SERVER,
            "\"%s\" holds a value of another type%s; redlease needs it for %s \"%s\" "
            "(WRONGTYPE)",
            name, type, what,
            rl_name_shown(cmd->argv[RL_SCRIPT_ARGV_HEAD], cmd->lens[RL_SCRIPT_ARGV_HEAD], first));
    return rl_fail(err, RL_ERR_SERVER,
                   "\"%s\" holds a value of another type%s; redlease needs it for %s (WRONGTYPE)",
                   name, type, what);
}
