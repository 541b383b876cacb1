/* The name a client's connections give themselves (CLIENT SETNAME on connect), and finding a
 * client's name again in CLIENT LIST: "redlease:<client id>:<label>", the label being the
 * client_name option or "<host name>:<pid>". The client id in the name is what ties a lock's
 * owner field (<client id>:<context>) to the connections, so the lock's format is untouched. */
#ifndef RL_CONN_NAME_H
#define RL_CONN_NAME_H

#include <stddef.h>

#include "redlease.h"

#define RL_CONN_NAME_PREFIX "redlease:"
/* "redlease:" + a UUID + ":" + a label of at most RL_CLIENT_NAME_MAX + 16, and the NUL. */
#define RL_CONN_NAME_MAX (9 + 36 + 1 + RL_CLIENT_NAME_MAX + 16 + 1)

/* RL_OK when `name` is a client name Redis takes (printable ASCII, no spaces) of 1 to
 * RL_CLIENT_NAME_MAX characters; else RL_ERR_ARGUMENT saying why. */
rl_status rl_client_name_check(const char *name, rl_error *err);

/* The connection name of the client `client_id` with the client_name `label` (NULL: this host's
 * name and this process's id, read now: a forked child names itself) into out[RL_CONN_NAME_MAX];
 * returns its length. */
size_t rl_conn_name(const char *client_id, const char *label, char *out);

/* The label of a connection of the client `client_id` in a CLIENT LIST reply (list, len), into
 * label[size]; 1 when one was found, else 0 and label "". */
int rl_conn_name_find(const char *list, size_t len, const char *client_id, char *label,
                      size_t size);

#endif
