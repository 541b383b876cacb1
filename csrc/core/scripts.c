#include "scripts.h"

#include <string.h>

#include "error.h"

/* Acquire or re-enter: free, or already ours -> one more hold and a fresh lease. */
static const char acquire_lua[] =
    "if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Release one hold. The latch remembers the answer so that a retried release (same request id)
 * gets the first answer instead of releasing twice. */
static const char release_lua[] =
    "local answered = redis.call('get', KEYS[3])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], 0, 'px', ARGV[4])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[5], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[3], 1, 'px', ARGV[4])\n"
    "return 1\n";

/* Refuses a key of another type (a lock is a hash): bad input must not delete users' data. */
static const char force_unlock_lua[] =
    "local t = redis.call('type', KEYS[1]).ok\n"
    "if t ~= 'hash' and t ~= 'none' then\n"
    "  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock')\n"
    "end\n"
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* Renew many (key, owner) pairs in one call. TYPE first so that a key replaced by another type
 * reports "held by others" instead of failing the whole batch with WRONGTYPE. */
static const char renew_lua[] =
    "local answers = {}\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local kind = redis.call('type', key).ok\n"
    "  if kind == 'none' then\n"
    "    answers[i] = 0\n"
    "  elseif kind == 'hash' and redis.call('hexists', key, ARGV[i + 1]) == 1 then\n"
    "    redis.call('pexpire', key, ARGV[1])\n"
    "    answers[i] = 1\n"
    "  else\n"
    "    answers[i] = 2\n"
    "  end\n"
    "end\n"
    "return answers\n";

static const char *const script_text[RL_SCRIPT_COUNT] = {
    [RL_SCRIPT_ACQUIRE] = acquire_lua,
    [RL_SCRIPT_RELEASE] = release_lua,
    [RL_SCRIPT_FORCE_UNLOCK] = force_unlock_lua,
    [RL_SCRIPT_RENEW] = renew_lua,
};

void rl_scripts_init(rl_scripts *s) {
    pthread_mutex_init(&s->mu, NULL);
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        s->sha[i][0] = '\0';
        atomic_init(&s->known[i], 0);
    }
}

void rl_scripts_destroy(rl_scripts *s) { pthread_mutex_destroy(&s->mu); }

/* SCRIPT LOAD on conn's server; the first load also records the sha. */
static rl_status load(rl_scripts *s, rl_conn *conn, const rl_config *cfg, int64_t timeout_ms,
                      rl_script_id id, rl_error *err) {
    const char *argv[3] = {"SCRIPT", "LOAD", script_text[id]};
    size_t lens[3] = {6, 4, strlen(script_text[id])};
    rl_cmd cmd = {3, argv, lens};
    redisReply *reply = NULL;
    rl_status st = rl_conn_exchange(conn, cfg, timeout_ms, 1, &cmd, &reply, 1, err);
    if (st != RL_OK) return st;
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        st = rl_fail_reply(err, "SCRIPT LOAD", reply);
    } else {
        pthread_mutex_lock(&s->mu);
        if (!atomic_load(&s->known[id])) {
            memcpy(s->sha[id], reply->str, 40);
            s->sha[id][40] = '\0';
            atomic_store(&s->known[id], 1);
        }
        pthread_mutex_unlock(&s->mu);
    }
    freeReplyObject(reply);
    return st;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0;
}

rl_status rl_scripts_run(rl_scripts *s, rl_conn *conn, const rl_config *cfg, int64_t timeout_ms,
                         rl_script_id id, size_t n, rl_cmd *cmds, redisReply **replies,
                         int idempotent, rl_error *err) {
    if (!atomic_load(&s->known[id])) {
        rl_status st = load(s, conn, cfg, timeout_ms, id, err);
        if (st != RL_OK) return st;
    }
    for (size_t i = 0; i < n; i++) {
        cmds[i].argv[0] = "EVALSHA";
        cmds[i].lens[0] = 7;
        cmds[i].argv[1] = s->sha[id];
        cmds[i].lens[1] = 40;
    }
    for (int attempt = 0;; attempt++) {
        rl_status st = rl_conn_exchange(conn, cfg, timeout_ms, n, cmds, replies, idempotent, err);
        if (st != RL_OK) return st;
        int missing = 0;
        for (size_t i = 0; i < n; i++) missing |= is_noscript(replies[i]);
        if (missing && attempt == 0) {
            /* The server lost its scripts (restart, SCRIPT FLUSH): load and run the calls again.
             * A call answered NOSCRIPT did not run, so this is safe for any script. */
            for (size_t i = 0; i < n; i++) {
                freeReplyObject(replies[i]);
                replies[i] = NULL;
            }
            st = load(s, conn, cfg, timeout_ms, id, err);
            if (st != RL_OK) return st;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (replies[i]->type != REDIS_REPLY_ERROR) continue;
            rl_status failed = rl_fail_reply(err, "the lock script", replies[i]);
            for (size_t j = 0; j < n; j++) {
                freeReplyObject(replies[j]);
                replies[j] = NULL;
            }
            return failed;
        }
        return RL_OK;
    }
}
