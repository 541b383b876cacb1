/* The system's CA certificates for a client that names none (no tls_ca_file / tls_ca_dir).
 *
 * An OpenSSL that came with the system knows where that system keeps them. The one a wheel
 * carries inside (built with RL_BUNDLED_OPENSSL, scripts/build-openssl) only knows its build-time
 * folder, /etc/ssl, which RHEL, Amazon Linux and SUSE do not fill: there it searches the places
 * Linux distributions keep their bundle, the list of Go's crypto/x509 (root_linux.go), after
 * SSL_CERT_FILE / SSL_CERT_DIR, which always come first. */
#ifndef RL_TLS_ROOTS_H
#define RL_TLS_ROOTS_H

#include <stddef.h>

/* The known bundle files and hashed-certificate folders, NULL-ended, most common first. */
extern const char *const rl_tls_ca_files[];
extern const char *const rl_tls_ca_dirs[];

/* The first of `paths` (NULL-ended) that is a readable regular file (want_dir 0) or a
 * searchable folder (want_dir 1), following symlinks; NULL when none is. */
const char *rl_tls_first_present(const char *const *paths, int want_dir);

#ifdef RL_WITH_TLS
#include <openssl/ssl.h>

/* Has ctx trust the system's CAs: OpenSSL's defaults when SSL_CERT_FILE or SSL_CERT_DIR is set
 * (or when the build uses the system's OpenSSL), else the first known bundle and folder found.
 * 1 on success, 0 with OpenSSL's error queue set (as SSL_CTX_set_default_verify_paths). */
int rl_tls_trust_system_roots(SSL_CTX *ctx);
#endif

#endif
