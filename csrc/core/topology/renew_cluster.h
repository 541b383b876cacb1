/* The watchdog's round over a Redis Cluster: the holds grouped by the node serving each key's
 * slot (one script call per slot and per RL_RENEW_PAIRS_PER_CALL pairs: a script's keys must
 * share a slot), every node's calls pipelined on the watchdog's connection to it and all nodes'
 * sent before any answer is read, so that a round costs one round trip per node, taken at the
 * same time: about the slowest node's time, not the sum. A call a node redirects (MOVED) or
 * cannot run (NOSCRIPT) is made again through the pool, which follows the cluster. A call of a
 * slot in migration (ASK, TRYAGAIN: its keys may be split between two nodes, which then refuse
 * any call of several keys) is made again one key at a time, so each key is renewed where it is.
 * A node that cannot be reached affects only its holds, and makes the map be asked again. */
#ifndef RL_RENEW_CLUSTER_H
#define RL_RENEW_CLUSTER_H

#include "client.h"
#include "cluster.h"

/* The cluster's renew operation (deploy.h) on cl, the client's cluster: answers[i] for
 * batch[i], the renewal script's answer (1 renewed, 0 gone, 2 held by others), or -1 when none
 * came. RL_OK when every node answered; else the first failure, in *err. */
rl_status rl_renew_on_cluster(rl_client *c, rl_cluster *cl, rl_hold **batch, size_t n,
                              int64_t lease, int64_t timeout_ms, long long *answers,
                              uint32_t *servers, rl_renew_outcome *out, rl_error *err);

#endif
