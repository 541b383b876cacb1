/* Pieces of Lua that several lock kinds' scripts share (the files of kinds/). */
#ifndef RL_SCRIPT_PARTS_H
#define RL_SCRIPT_PARTS_H

/* clang-format off */
/* Every acquire answers nil when it took the lock afresh and REENTERED when this owner already
 * held it: the client then knows whether Redis still had the hold it believes it has. */
#define REENTERED "redis.status_reply('REENTERED')"


/* Refuses a key of another type (a lock is a hash): bad input must not delete users' data. */
#define REFUSE_NON_HASH(key)                                                                     \
    "local t = redis.call('type', " key ").ok\n"                                                 \
    "if t ~= 'hash' and t ~= 'none' then\n"                                                      \
    "  return redis.error_reply('WRONGTYPE ' .. " key " .. ' holds a ' .. t .. ', not a lock')\n" \
    "end\n"
/* clang-format on */

#endif
