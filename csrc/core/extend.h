/* Setting a held lock's lease in Redis (extend.c): the multi-lock's final leases and the
 * fixed-lease extend/reacquire share it. */
#ifndef RL_EXTEND_H
#define RL_EXTEND_H

#include <stdint.h>

#include "lock.h"

/* Gives context's hold of l the lease `lease_ms` from now, where this owner still holds it (the
 * renewal script). RL_OK; RL_LOST, the hold marked lost, when Redis no longer has it (`what`
 * ends the message, e.g. " while the multi-lock was taken"); RL_NOT_OWNED when this client has
 * no such hold. `adopt`: the lease becomes the hold's fixed lease (reentrant releases and
 * reacquire use it), else it is a one-off. */
rl_status rl_lock_set_lease(rl_lock *l, uint64_t context, int64_t lease_ms, int adopt,
                            const char *what, rl_error *err);

#endif
