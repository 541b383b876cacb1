#include "url.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tls.h"

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Copies [s, s+n) percent-decoded into a new string; NULL on a bad escape or no memory. */
static char *decode(const char *s, size_t n, int *bad) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                *bad = 1;
                free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* Parses a decimal in [lo, hi] from [s, s+n). */
static int parse_int(const char *s, size_t n, long lo, long hi, int *out) {
    if (n == 0 || n > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

void rl_endpoint_free(rl_endpoint *ep) {
    free(ep->host);
    free(ep->user);
    free(ep->password);
    for (int i = 0; i < ep->sentinels; i++)
        free(ep->sentinel_hosts[i]);
    free(ep->sentinel_hosts);
    free(ep->sentinel_ports);
    free(ep->master_name);
    for (int i = 0; i < ep->seeds; i++)
        free(ep->seed_hosts[i]);
    free(ep->seed_hosts);
    free(ep->seed_ports);
    memset(ep, 0, sizeof *ep);
}

/* user[:password] from [s, s+n); an empty user means password-only AUTH. */
static rl_status parse_userinfo(const char *s, size_t n, rl_endpoint *ep, rl_error *err) {
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : n;
    int bad = 0;
    if (ulen > 0) {
        ep->user = decode(s, ulen, &bad);
        if (!ep->user) goto fail;
    }
    if (colon) {
        ep->password = decode(colon + 1, n - ulen - 1, &bad);
        if (!ep->password) goto fail;
    }
    return RL_OK;
fail:
    return bad ? rl_fail(err, RL_ERR_ARGUMENT, "bad percent-escape in the URL's user or password")
               : rl_fail(err, RL_ERR_MEMORY, "out of memory");
}

/* The userinfo, up to the last '@' before the path; returns where the hosts start. */
static const char *parse_authority(const char *rest, rl_endpoint *ep, rl_status *st,
                                   rl_error *err) {
    const char *at = NULL;
    *st = RL_OK;
    for (const char *p = rest; *p && *p != '/'; p++)
        if (*p == '@') at = p;
    if (!at) return rest;
    *st = parse_userinfo(rest, (size_t)(at - rest), ep, err);
    return at + 1;
}

/* host[:port] or [IPv6][:port] in [s, end): a malloc'd host and *port (default_port if none). */
static rl_status parse_hostport(const char *s, const char *end, int default_port, char **host_out,
                                int *port, rl_error *err) {
    const char *host = s, *host_end, *p = NULL;
    if (*s == '[') {
        const char *close = memchr(s, ']', (size_t)(end - s));
        if (!close) return rl_fail(err, RL_ERR_ARGUMENT, "unterminated '[' in the URL's host");
        host = s + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':') return rl_fail(err, RL_ERR_ARGUMENT, "junk after ']' in URL");
            p = close + 2;
        }
    } else {
        const char *colon = memchr(s, ':', (size_t)(end - s));
        host_end = colon ? colon : end;
        if (colon) p = colon + 1;
    }
    if (host_end == host) return rl_fail(err, RL_ERR_ARGUMENT, "the URL has no host");
    *port = default_port;
    if (p && parse_int(p, (size_t)(end - p), 1, 65535, port) != 0)
        return rl_fail(err, RL_ERR_ARGUMENT, "the URL's port must be a number from 1 to 65535");
    *host_out = strndup(host, (size_t)(host_end - host));
    return *host_out ? RL_OK : rl_fail(err, RL_ERR_MEMORY, "out of memory");
}

static rl_status parse_db(const char *s, rl_endpoint *ep, rl_error *err) {
    if (*s != '\0' && parse_int(s, strlen(s), 0, 1000000, &ep->db) != 0)
        return rl_fail(err, RL_ERR_ARGUMENT, "the URL's database (after '/') must be a number");
    return RL_OK;
}

static rl_status parse_tcp(const char *rest, rl_endpoint *ep, rl_error *err) {
    rl_status st;
    rest = parse_authority(rest, ep, &st, err);
    if (st != RL_OK) return st;
    const char *slash = strchr(rest, '/');
    st = parse_hostport(rest, slash ? slash : rest + strlen(rest), 6379, &ep->host, &ep->port, err);
    return st == RL_OK && slash ? parse_db(slash + 1, ep, err) : st;
}

/* host1:port1,host2:port2 in [rest, end): malloc'd arrays of *n hosts and ports. */
static rl_status parse_host_list(const char *rest, const char *end, int default_port,
                                 const char *what, char ***hosts, int **ports, int *n,
                                 rl_error *err) {
    int most = 1;
    for (const char *p = rest; p < end; p++)
        most += *p == ',';
    *hosts = calloc((size_t)most, sizeof **hosts);
    *ports = calloc((size_t)most, sizeof **ports);
    if (!*hosts || !*ports) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = RL_OK;
    for (const char *p = rest; p <= end && st == RL_OK; (*n)++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if (stop == p) return rl_fail(err, RL_ERR_ARGUMENT, "an empty host in the %s' list", what);
        st = parse_hostport(p, stop, default_port, &(*hosts)[*n], &(*ports)[*n], err);
        p = stop + 1;
    }
    return st;
}

/* host1:port1,host2:port2/<master name>[/db] */
static rl_status parse_sentinel(const char *rest, rl_endpoint *ep, rl_error *err) {
    rl_status st;
    rest = parse_authority(rest, ep, &st, err);
    if (st != RL_OK) return st;
    const char *slash = strchr(rest, '/');
    const char *hosts_end = slash ? slash : rest + strlen(rest);
    st = parse_host_list(rest, hosts_end, 26379, "sentinels", &ep->sentinel_hosts,
                         &ep->sentinel_ports, &ep->sentinels, err);
    if (st != RL_OK) return st;
    const char *name = slash ? slash + 1 : NULL, *name_end = name ? strchr(name, '/') : NULL;
    size_t name_len = !name ? 0 : name_end ? (size_t)(name_end - name) : strlen(name);
    if (name_len == 0)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "a redis+sentinel:// URL names the master: .../<master name>[/db]");
    int bad = 0;
    ep->master_name = decode(name, name_len, &bad);
    if (!ep->master_name)
        return rl_fail(err, bad ? RL_ERR_ARGUMENT : RL_ERR_MEMORY, "bad master name in the URL");
    return name_end ? parse_db(name_end + 1, ep, err) : RL_OK;
}

/* host1:port1,host2:port2[/]: seed nodes. A cluster has only database 0, so no /db. */
static rl_status parse_cluster(const char *rest, rl_endpoint *ep, rl_error *err) {
    rl_status st;
    rest = parse_authority(rest, ep, &st, err);
    if (st != RL_OK) return st;
    ep->cluster = 1;
    const char *slash = strchr(rest, '/');
    if (slash && slash[1] != '\0')
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "a redis+cluster:// URL takes no database: a Redis Cluster has only db 0");
    st = parse_host_list(rest, slash ? slash : rest + strlen(rest), 6379, "cluster seeds",
                         &ep->seed_hosts, &ep->seed_ports, &ep->seeds, err);
    if (st != RL_OK) return st;
    ep->host = strdup(ep->seed_hosts[0]); /* for messages until a node is chosen */
    ep->port = ep->seed_ports[0];
    return ep->host ? RL_OK : rl_fail(err, RL_ERR_MEMORY, "out of memory");
}

static rl_status parse_unix(const char *rest, rl_endpoint *ep, rl_error *err) {
    ep->is_unix = 1;
    const char *path = strchr(rest, '/');
    if (!path) return rl_fail(err, RL_ERR_ARGUMENT, "unix:// URL needs an absolute path");
    if (path != rest) {
        if (path[-1] != '@')
            return rl_fail(err, RL_ERR_ARGUMENT,
                           "unix:// URL: write unix:///path or unix://user:pass@/path");
        rl_status st = parse_userinfo(rest, (size_t)(path - 1 - rest), ep, err);
        if (st != RL_OK) return st;
    }
    const char *query = strchr(path, '?');
    size_t path_len = query ? (size_t)(query - path) : strlen(path);
    if (path_len < 2) return rl_fail(err, RL_ERR_ARGUMENT, "unix:// URL has an empty path");
    if (query) {
        if (strncmp(query, "?db=", 4) != 0 ||
            parse_int(query + 4, strlen(query + 4), 0, 1000000, &ep->db) != 0)
            return rl_fail(err, RL_ERR_ARGUMENT, "unix:// URL accepts only ?db=N");
    }
    int bad = 0;
    ep->host = decode(path, path_len, &bad);
    if (!ep->host)
        return rl_fail(err, bad ? RL_ERR_ARGUMENT : RL_ERR_MEMORY, "bad unix socket path");
    return RL_OK;
}

rl_status rl_endpoint_parse(const char *url, rl_endpoint *ep, rl_error *err) {
    memset(ep, 0, sizeof *ep);
    if (!url) return rl_fail(err, RL_ERR_ARGUMENT, "url must not be NULL");
    rl_status st;
    if (strncmp(url, "redis://", 8) == 0) {
        st = parse_tcp(url + 8, ep, err);
    } else if (strncmp(url, "rediss://", 9) == 0) {
        ep->tls = 1;
        st = rl_tls_available() ? parse_tcp(url + 9, ep, err)
                                : rl_fail(err, RL_ERR_UNSUPPORTED,
                                          "rediss:// (TLS) is not supported by this build");
    } else if (strncmp(url, "unix://", 7) == 0) {
        st = parse_unix(url + 7, ep, err);
    } else if (strncmp(url, "redis+sentinel://", 17) == 0) {
        st = parse_sentinel(url + 17, ep, err);
    } else if (strncmp(url, "rediss+sentinel://", 18) == 0) {
        ep->tls = 1;
        st = rl_tls_available()
                 ? parse_sentinel(url + 18, ep, err)
                 : rl_fail(err, RL_ERR_UNSUPPORTED,
                           "rediss+sentinel:// (TLS) is not supported by this build");
    } else if (strncmp(url, "redis+cluster://", 16) == 0) {
        st = parse_cluster(url + 16, ep, err);
    } else if (strncmp(url, "rediss+cluster://", 17) == 0) {
        ep->tls = 1;
        st = rl_tls_available() ? parse_cluster(url + 17, ep, err)
                                : rl_fail(err, RL_ERR_UNSUPPORTED,
                                          "rediss+cluster:// (TLS) is not supported by this build");
    } else {
        /* Only the scheme is quoted: the rest may hold a password. */
        const char *sep = strstr(url, "://");
        int scheme_len = sep && sep - url <= 16 ? (int)(sep - url) : -1;
        if (scheme_len >= 0)
            st = rl_fail(err, RL_ERR_ARGUMENT,
                         "URL must start with redis://, rediss://, unix://, redis+sentinel:// or "
                         "redis+cluster:// (got %.*s://)",
                         scheme_len, url);
        else
            st = rl_fail(err, RL_ERR_ARGUMENT,
                         "URL must start with redis://, rediss://, unix://, redis+sentinel:// or "
                         "redis+cluster:// (got no scheme)");
    }
    if (st != RL_OK) rl_endpoint_free(ep);
    return st;
}

/* Where the password is in url, as the parser reads it: [*start, *end); 0 when there is none. */
static int password_span(const char *url, size_t *start, size_t *end) {
    const char *rest, *userinfo_end = NULL;
    if (strncmp(url, "redis://", 8) == 0 || strncmp(url, "rediss://", 9) == 0 ||
        strncmp(url, "redis+sentinel://", 17) == 0 || strncmp(url, "rediss+sentinel://", 18) == 0 ||
        strncmp(url, "redis+cluster://", 16) == 0 || strncmp(url, "rediss+cluster://", 17) == 0) {
        rest = strstr(url, "://") + 3;
        for (const char *p = rest; *p && *p != '/'; p++)
            if (*p == '@') userinfo_end = p; /* the last '@' before the path, as parse_tcp */
    } else if (strncmp(url, "unix://", 7) == 0) {
        rest = url + 7;
        const char *path = strchr(rest, '/');
        if (path && path != rest && path[-1] == '@') userinfo_end = path - 1;
    } else {
        return 0;
    }
    if (!userinfo_end) return 0;
    const char *colon = memchr(rest, ':', (size_t)(userinfo_end - rest));
    if (!colon || colon + 1 == userinfo_end) return 0;
    *start = (size_t)(colon + 1 - url);
    *end = (size_t)(userinfo_end - url);
    return 1;
}

char *rl_url_redacted(const char *url) {
    size_t start, end, len = strlen(url);
    if (!password_span(url, &start, &end)) return strdup(url);
    char *out = malloc(len - (end - start) + 4);
    if (!out) return NULL;
    memcpy(out, url, start);
    memcpy(out + start, "***", 3);
    memcpy(out + start + 3, url + end, len - end + 1);
    return out;
}
