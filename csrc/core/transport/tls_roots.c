#include "tls_roots.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const rl_tls_ca_files[] = {
    "/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Arch, Alpine */
    "/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL, Amazon Linux */
    "/etc/ssl/ca-bundle.pem",                            /* openSUSE, SLES */
    "/etc/pki/tls/cacert.pem",                           /* OpenELEC */
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* CentOS, RHEL 7 and later */
    "/etc/ssl/cert.pem",                                 /* Alpine, Void, the BSDs */
    "/var/lib/ca-certificates/ca-bundle.pem",            /* SUSE's own (/etc/ssl links it) */
    NULL,
};

const char *const rl_tls_ca_dirs[] = {
    "/etc/ssl/certs",     /* Debian, Ubuntu, Alpine, SUSE (hashed names) */
    "/etc/pki/tls/certs", /* Fedora, RHEL */
    NULL,
};

const char *rl_tls_first_present(const char *const *paths, int want_dir) {
    for (; *paths; paths++) {
        struct stat st;
        if (stat(*paths, &st) != 0) continue;
        if (want_dir ? S_ISDIR(st.st_mode) && access(*paths, X_OK) == 0
                     : S_ISREG(st.st_mode) && access(*paths, R_OK) == 0)
            return *paths;
    }
    return NULL;
}

#ifdef RL_WITH_TLS

int rl_tls_trust_system_roots(SSL_CTX *ctx) {
#ifdef RL_BUNDLED_OPENSSL
    /* the user's word first: OpenSSL's defaults read both variables */
    if (!getenv("SSL_CERT_FILE") && !getenv("SSL_CERT_DIR")) {
        const char *file = rl_tls_first_present(rl_tls_ca_files, 0);
        const char *dir = rl_tls_first_present(rl_tls_ca_dirs, 1);
        if (file || dir) return SSL_CTX_load_verify_locations(ctx, file, dir);
    }
#endif
    return SSL_CTX_set_default_verify_paths(ctx);
}

#endif
