/* Parsing redis://, rediss://, unix://, redis+sentinel:// and redis+cluster:// URLs into where and
 * how to connect. */
#ifndef RL_URL_H
#define RL_URL_H

#include "redlease.h"

typedef struct rl_endpoint {
    int is_unix;
    int tls;    /* rediss:// */
    char *host; /* TCP host without brackets, or the unix socket path */
    int port;
    int db;
    char *user;     /* ACL user, or NULL */
    char *password; /* or NULL */
    /* redis+sentinel:// (host/port then unset: the sentinels name the master) */
    int sentinels;
    char **sentinel_hosts;
    int *sentinel_ports;
    char *master_name;
    /* redis+cluster:// (host/port then the first seed): the seed nodes the slot map is asked of */
    int cluster;
    int seeds;
    char **seed_hosts;
    int *seed_ports;
} rl_endpoint;

/* Fills *out (to be freed with rl_endpoint_free) or fails with RL_ERR_ARGUMENT /
 * RL_ERR_UNSUPPORTED. */
rl_status rl_endpoint_parse(const char *url, rl_endpoint *out, rl_error *err);
void rl_endpoint_free(rl_endpoint *ep);

/* The URL with its password (if any) replaced by "***", as rl_endpoint_parse reads it; malloc'd,
 * NULL when out of memory. */
char *rl_url_redacted(const char *url);

#endif
