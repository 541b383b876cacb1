/* A throwaway Redis Cluster for the core's tests: scripts/redis-cluster (3 masters, 3 replicas
 * on free loopback ports) run as a child whose stdin the test holds; closing it stops the
 * cluster. Started once, on first use, and stopped when the run exits. */
#ifndef RL_TEST_CLUSTER_KIT_H
#define RL_TEST_CLUSTER_KIT_H

/* The cluster's redis+cluster:// URL, or NULL (with the reason on stderr) when it cannot start. */
const char *test_cluster_url(void);

#endif
