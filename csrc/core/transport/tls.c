#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#ifndef RL_WITH_TLS

int rl_tls_available(void) {
    return 0;
}

rl_status rl_tls_context_new(const rl_options *o, const char *host, rl_tls_context **out,
                             rl_error *err) {
    (void)o, (void)host;
    *out = NULL;
    return rl_fail(err, RL_ERR_UNSUPPORTED, "rediss:// (TLS) is not supported by this build");
}

void rl_tls_context_free(rl_tls_context *context) {
    (void)context;
}

rl_tls *rl_tls_connect(rl_tls_context *context, int fd, const char *host, int64_t deadline,
                       char *why, size_t why_size) {
    (void)context, (void)fd, (void)host, (void)deadline;
    snprintf(why, why_size, "this build has no TLS");
    return NULL;
}

void rl_tls_free(rl_tls *tls) {
    (void)tls;
}

ssize_t rl_tls_send(rl_tls *tls, const void *buf, size_t len, int64_t deadline, char *why,
                    size_t why_size) {
    (void)tls, (void)buf, (void)len, (void)deadline;
    snprintf(why, why_size, "this build has no TLS");
    errno = ENOTSUP;
    return -1;
}

ssize_t rl_tls_recv(rl_tls *tls, void *buf, size_t len, int wait, int64_t deadline, char *why,
                    size_t why_size) {
    (void)wait;
    return rl_tls_send(tls, buf, len, deadline, why, why_size);
}

size_t rl_tls_pending(rl_tls *tls) {
    (void)tls;
    return 0;
}

int rl_tls_idle_check(rl_tls *tls) {
    (void)tls;
    return 0;
}

#else

#include <arpa/inet.h>
#include <dirent.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "platform.h"
#include "tls_roots.h"

struct rl_tls_context {
    SSL_CTX *ctx;
    char *server_name; /* tls_server_name, or NULL: each connection's host */
    int verify;
};

struct rl_tls {
    SSL *ssl;
    int fd;
    int probing;      /* an idle check: reads must not block */
    int64_t deadline; /* of the call in progress: the BIO waits for the socket until then */
    int last_errno;   /* of the socket call that failed */
};

int rl_tls_available(void) {
    return 1;
}

/* ---- the socket BIO: sends that raise no SIGPIPE, waits bounded by the call's deadline
 * --------------- */

/* The socket is non-blocking: waits for it until the call's deadline. 0 when ready; -1 with
 * last_errno (ETIMEDOUT when the deadline passed). A socket shut down by rl_conn_interrupt is
 * ready at once (its next call fails). */
static int wait_socket(rl_tls *t, short events) {
    int rc = rl_poll_until(t->fd, events, t->deadline);
    if (rc > 0) return 0;
    t->last_errno = rc == 0 ? ETIMEDOUT : errno;
    return -1;
}

static BIO_METHOD *socket_method;
static pthread_once_t socket_method_once = PTHREAD_ONCE_INIT;

static int bio_write(BIO *bio, const char *buf, int len) {
    rl_tls *t = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    for (;;) {
        ssize_t n = send(t->fd, buf, (size_t)len, RL_SEND_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return (int)n;
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_socket(t, POLLOUT) == 0) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -1; /* last_errno set */
        t->last_errno = errno;
        return -1;
    }
}

static int bio_read(BIO *bio, char *buf, int len) {
    rl_tls *t = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    for (;;) {
        ssize_t n = recv(t->fd, buf, (size_t)len, MSG_DONTWAIT);
        if (n >= 0) return (int)n;
        if (errno == EINTR) continue;
        int would_block = errno == EAGAIN || errno == EWOULDBLOCK;
        if (would_block && !t->probing && wait_socket(t, POLLIN) == 0) continue;
        if (would_block && !t->probing) return -1; /* last_errno set */
        t->last_errno = errno;
        if (t->probing && would_block) BIO_set_retry_read(bio);
        return -1;
    }
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
    (void)bio, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static void make_socket_method(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "redlease socket");
    if (m && BIO_meth_set_write(m, bio_write) && BIO_meth_set_read(m, bio_read) &&
        BIO_meth_set_ctrl(m, bio_ctrl))
        socket_method = m;
    else
        BIO_meth_free(m);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void openssl_reason(char *why, size_t size, const char *what) {
    unsigned long e = ERR_get_error();
    char text[200] = "no detail";
    if (e) ERR_error_string_n(e, text, sizeof text);
    snprintf(why, size, "%s: %s", what, text);
    ERR_clear_error();
}

/* What a failed SSL_* call means: -1 with errno and why, or 0 (the peer closed). */
static ssize_t failed(rl_tls *t, int rc, char *why, size_t size) {
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        snprintf(why, size, "timed out");
        return -1;
    }
    if (e == SSL_ERROR_SYSCALL && t->last_errno) {
        errno = t->last_errno;
        char buf[80];
        snprintf(why, size, "%s",
                 t->last_errno == EAGAIN || t->last_errno == EWOULDBLOCK ||
                         t->last_errno == ETIMEDOUT
                     ? "timed out"
                     : rl_plat_strerror(t->last_errno, buf, sizeof buf));
        return -1;
    }
    if (e == SSL_ERROR_SYSCALL || (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) ==
                                                             SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
        ERR_clear_error();
        return 0; /* closed without a TLS goodbye */
    }
    errno = EPROTO;
    openssl_reason(why, size, "TLS error");
    return -1;
}

/* ---- the context --------------------------------------------------------------------------- */

/* tls_ca_dir: a readable directory that holds at least one hashed certificate (c_rehash or
 * openssl rehash names them HHHHHHHH.N); OpenSSL itself only looks there during a handshake,
 * where a wrong directory would fail every connection with a vague verification error. */
static rl_status hashed_directory(const char *path, rl_error *err) {
    if (!path) return RL_OK;
    DIR *dir = opendir(path);
    if (!dir) {
        char buf[80];
        return rl_fail(err, RL_ERR_ARGUMENT, "tls_ca_dir: cannot read %s: %s", path,
                       rl_plat_strerror(errno, buf, sizeof buf));
    }
    int found = 0;
    for (struct dirent *d; !found && (d = readdir(dir));) {
        size_t hex = strspn(d->d_name, "0123456789abcdef");
        found = hex == 8 && d->d_name[8] == '.' && d->d_name[9] >= '0' && d->d_name[9] <= '9';
    }
    closedir(dir);
    return found ? RL_OK
                 : rl_fail(err, RL_ERR_ARGUMENT,
                           "tls_ca_dir %s: holds no hashed CA certificate (make the names with "
                           "openssl rehash or c_rehash)",
                           path);
}

/* OpenSSL asks for the passphrase of an encrypted key through this; its default prompts on the
 * terminal and blocks. Refusing makes the load fail; *asked tells why. */
static int refuse_passphrase(char *buf, int size, int rwflag, void *asked) {
    (void)buf, (void)size, (void)rwflag;
    if (asked) *(int *)asked = 1;
    return -1;
}

static rl_status readable(const char *option, const char *path, rl_error *err) {
    if (!path) return RL_OK;
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return RL_OK;
    }
    char buf[80];
    return rl_fail(err, RL_ERR_ARGUMENT, "%s: cannot read %s: %s", option, path,
                   rl_plat_strerror(errno, buf, sizeof buf));
}

static rl_status load(SSL_CTX *ctx, const rl_options *o, rl_error *err) {
    char why[300];
    if (o->tls_ca_file || o->tls_ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir) != 1) {
            openssl_reason(why, sizeof why, "no CA certificate loaded");
            return rl_fail(err, RL_ERR_ARGUMENT, "tls_ca_file / tls_ca_dir: %s", why);
        }
    } else if (rl_tls_trust_system_roots(ctx) != 1) {
        openssl_reason(why, sizeof why, "the system's CA certificates");
        return rl_fail(err, RL_ERR_ARGUMENT, "%s", why);
    }
    if (!o->tls_cert_file) return RL_OK;
    if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1) {
        openssl_reason(why, sizeof why, "not a PEM certificate");
        return rl_fail(err, RL_ERR_ARGUMENT, "tls_cert_file %s: %s", o->tls_cert_file, why);
    }
    int asked = 0;
    SSL_CTX_set_default_passwd_cb(ctx, refuse_passphrase);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, &asked);
    int used = SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL); /* `asked` ends here */
    if (used != 1 && asked) {
        ERR_clear_error();
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "tls_key_file %s: the key is encrypted; redlease reads unencrypted PEM "
                       "keys only (decrypt it: openssl pkey -in KEY -out PLAIN_KEY)",
                       o->tls_key_file);
    }
    if (used != 1) {
        if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            return rl_fail(err, RL_ERR_ARGUMENT, "tls_key_file does not match tls_cert_file");
        }
        openssl_reason(why, sizeof why, "not an unencrypted PEM private key");
        return rl_fail(err, RL_ERR_ARGUMENT, "tls_key_file %s: %s", o->tls_key_file, why);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        return rl_fail(err, RL_ERR_ARGUMENT, "tls_key_file does not match tls_cert_file");
    }
    return RL_OK;
}

rl_status rl_tls_context_new(const rl_options *o, const char *host, rl_tls_context **out,
                             rl_error *err) {
    *out = NULL;
    if (!o->tls_cert_file != !o->tls_key_file)
        return rl_fail(err, RL_ERR_ARGUMENT, "tls_cert_file and tls_key_file go together");
    rl_status st;
    if ((st = readable("tls_ca_file", o->tls_ca_file, err)) != RL_OK ||
        (st = readable("tls_cert_file", o->tls_cert_file, err)) != RL_OK ||
        (st = readable("tls_key_file", o->tls_key_file, err)) != RL_OK ||
        (st = hashed_directory(o->tls_ca_dir, err)) != RL_OK)
        return st;
    (void)host; /* each connection verifies the host it connects to (Sentinel: several) */
    pthread_once(&socket_method_once, make_socket_method);
    rl_tls_context *t = calloc(1, sizeof *t);
    if (!t || !socket_method ||
        (o->tls_server_name && !(t->server_name = strdup(o->tls_server_name))) ||
        !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        rl_tls_context_free(t);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory setting up TLS");
    }
    t->verify = !o->tls_insecure_skip_verify;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    /* "re*.example.com" is no name for "redis.example.com": only a whole leftmost label. */
    X509_VERIFY_PARAM_set_hostflags(SSL_CTX_get0_param(t->ctx),
                                    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if ((st = load(t->ctx, o, err)) != RL_OK) {
        rl_tls_context_free(t);
        return st;
    }
    *out = t;
    return RL_OK;
}

void rl_tls_context_free(rl_tls_context *t) {
    if (!t) return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

/* ---- a connection -------------------------------------------------------------------------- */

rl_tls *rl_tls_connect(rl_tls_context *c, int fd, const char *host, int64_t deadline, char *why,
                       size_t why_size) {
    ERR_clear_error();
    const char *name = c->server_name ? c->server_name : host;
    unsigned char ip[16];
    int name_is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    rl_tls *t = calloc(1, sizeof *t);
    BIO *bio = NULL;
    if (!t || !(t->ssl = SSL_new(c->ctx)) || !(bio = BIO_new(socket_method))) {
        snprintf(why, why_size, "out of memory starting TLS");
        BIO_free(bio);
        rl_tls_free(t);
        return NULL;
    }
    t->fd = fd;
    t->deadline = deadline;
    BIO_set_data(bio, t);
    BIO_set_init(bio, 1);
    SSL_set_bio(t->ssl, bio, bio);
    if (c->verify) {
        int named = name_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name)
                               : SSL_set1_host(t->ssl, name);
        if (named != 1) {
            snprintf(why, why_size, "cannot verify against the name %s", name);
            rl_tls_free(t);
            return NULL;
        }
    }
    if (!name_is_ip) SSL_set_tlsext_host_name(t->ssl, name);
    int rc = SSL_connect(t->ssl);
    if (rc == 1) return t;
    long verified = SSL_get_verify_result(t->ssl);
    if (c->verify && verified != X509_V_OK) {
        snprintf(why, why_size, "TLS certificate verification failed: %s (expected name %s)",
                 X509_verify_cert_error_string(verified), name);
        ERR_clear_error();
    } else {
        char detail[200];
        if (failed(t, rc, detail, sizeof detail) == 0) snprintf(detail, sizeof detail, "closed");
        snprintf(why, why_size, "TLS handshake failed: %s", detail);
    }
    rl_tls_free(t);
    return NULL;
}

void rl_tls_free(rl_tls *t) {
    if (!t) return;
    SSL_free(t->ssl); /* no close_notify: the socket is closed right after */
    free(t);
}

ssize_t rl_tls_send(rl_tls *t, const void *buf, size_t len, int64_t deadline, char *why,
                    size_t why_size) {
    ERR_clear_error();
    t->last_errno = 0;
    t->deadline = deadline;
    int rc = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (rc > 0) return rc;
    ssize_t n = failed(t, rc, why, why_size);
    if (n == 0) {
        errno = EPIPE;
        snprintf(why, why_size, "the server closed the connection");
        return -1;
    }
    return n;
}

ssize_t rl_tls_recv(rl_tls *t, void *buf, size_t len, int wait, int64_t deadline, char *why,
                    size_t why_size) {
    ERR_clear_error();
    t->last_errno = 0;
    t->deadline = deadline;
    t->probing = !wait;
    int rc = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    t->probing = 0;
    return rc > 0 ? rc : failed(t, rc, why, why_size);
}

size_t rl_tls_pending(rl_tls *t) {
    return (size_t)SSL_pending(t->ssl);
}

int rl_tls_idle_check(rl_tls *t) {
    ERR_clear_error();
    char byte;
    t->probing = 1;
    t->last_errno = 0;
    int rc = SSL_peek(t->ssl, &byte, 1);
    t->probing = 0;
    if (rc > 0) return 0; /* data nobody asked for */
    int fit = SSL_get_error(t->ssl, rc) == SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return fit;
}

#endif
