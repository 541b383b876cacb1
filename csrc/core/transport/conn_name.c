#include "conn_name.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

#define HOST_SHOWN 64

/* What Redis refuses in a client name (CLIENT SETNAME: "cannot contain spaces, newlines or
 * special characters"): anything outside '!'..'~'. */
static int allowed(char ch) {
    return ch >= '!' && ch <= '~';
}

rl_status rl_client_name_check(const char *name, rl_error *err) {
    size_t len = strlen(name);
    if (len == 0 || len > RL_CLIENT_NAME_MAX)
        return rl_fail(err, RL_ERR_ARGUMENT, "client_name must be 1 to %d characters long",
                       RL_CLIENT_NAME_MAX);
    for (size_t i = 0; i < len; i++)
        if (!allowed(name[i]))
            return rl_fail(err, RL_ERR_ARGUMENT,
                           "client_name must be printable ASCII without spaces (as Redis takes "
                           "in a client name): character %zu is not",
                           i + 1);
    return RL_OK;
}

size_t rl_conn_name(const char *client_id, const char *label, char *out) {
    char host[HOST_SHOWN + 1] = "";
    if (!label) {
        if (gethostname(host, sizeof host) != 0) host[0] = '\0';
        host[HOST_SHOWN] = '\0';
        for (char *p = host; *p; p++) /* a host name Redis would refuse is shown, not dropped */
            if (!allowed(*p)) *p = '_';
        if (!host[0]) snprintf(host, sizeof host, "%s", "unknown-host");
    }
    int n = label ? snprintf(out, RL_CONN_NAME_MAX, RL_CONN_NAME_PREFIX "%s:%s", client_id, label)
                  : snprintf(out, RL_CONN_NAME_MAX, RL_CONN_NAME_PREFIX "%s:%s:%ld", client_id,
                             host, (long)getpid());
    return n < 0 ? 0 : (size_t)n < RL_CONN_NAME_MAX ? (size_t)n : RL_CONN_NAME_MAX - 1;
}

/* memmem, which C11 lacks. */
static const char *find(const char *hay, size_t len, const char *needle, size_t n) {
    for (size_t i = 0; i + n <= len; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, n) == 0) return hay + i;
    return NULL;
}

int rl_conn_name_find(const char *list, size_t len, const char *client_id, char *label,
                      size_t size) {
    char wanted[64];
    int n = snprintf(wanted, sizeof wanted, " name=" RL_CONN_NAME_PREFIX "%s:", client_id);
    label[0] = '\0';
    if (n <= 0 || (size_t)n >= sizeof wanted || !client_id[0]) return 0;
    /* One line per connection, "id=.. addr=.. .. name=<name> age=..": a name has no spaces. */
    for (const char *at = list, *end = list + len; at < end;) {
        const char *line_end = memchr(at, '\n', (size_t)(end - at));
        if (!line_end) line_end = end;
        const char *hit = find(at, (size_t)(line_end - at), wanted, (size_t)n);
        if (hit) {
            const char *from = hit + n, *to = from;
            while (to < line_end && *to != ' ' && *to != '\r')
                to++;
            size_t take = (size_t)(to - from) < size - 1 ? (size_t)(to - from) : size - 1;
            memcpy(label, from, take);
            label[take] = '\0';
            return 1;
        }
        at = line_end + 1;
    }
    return 0;
}
