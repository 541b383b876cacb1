/* Where a wheel's own OpenSSL looks for the system's CAs (csrc/core/transport/tls_roots.c): the
 * distributions' bundle paths, and the pick of the first one present. The search itself, end to
 * end, is tests/packaging/test_system_ca.py (a wheel in namespaces laid out like each system). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "tls_roots.h"

static int listed(const char *const *list, const char *path) {
    for (; *list; list++)
        if (strcmp(*list, path) == 0) return 1;
    return 0;
}

TEST(tls_roots_list_every_distribution_bundle) {
    CHECK(listed(rl_tls_ca_files, "/etc/ssl/certs/ca-certificates.crt")); /* Debian */
    CHECK(listed(rl_tls_ca_files, "/etc/pki/tls/certs/ca-bundle.crt"));   /* RHEL */
    CHECK(listed(rl_tls_ca_files, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"));
    CHECK(listed(rl_tls_ca_files, "/etc/ssl/ca-bundle.pem"));                 /* SUSE */
    CHECK(listed(rl_tls_ca_files, "/var/lib/ca-certificates/ca-bundle.pem")); /* SUSE */
    CHECK(listed(rl_tls_ca_files, "/etc/ssl/cert.pem"));                      /* Alpine */
    CHECK(listed(rl_tls_ca_dirs, "/etc/ssl/certs") && listed(rl_tls_ca_dirs, "/etc/pki/tls/certs"));
}

TEST(tls_roots_pick_the_first_file_or_folder_present) {
    char dir[] = "/tmp/rl-roots-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char missing[64], folder[64], file[64], later[64], link[64], dangling[64];
    snprintf(missing, sizeof missing, "%s/missing.pem", dir);
    snprintf(folder, sizeof folder, "%s/folder", dir);
    snprintf(file, sizeof file, "%s/bundle.pem", dir);
    snprintf(later, sizeof later, "%s/later.pem", dir);
    snprintf(link, sizeof link, "%s/link.pem", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.pem", dir);
    CHECK(mkdir(folder, 0755) == 0);
    FILE *f = fopen(file, "w");
    CHECK(f && fclose(f) == 0);
    f = fopen(later, "w");
    CHECK(f && fclose(f) == 0);
    CHECK(symlink(file, link) == 0 && symlink(missing, dangling) == 0);

    /* a folder is no file, a dangling link is nothing; a link to a file is that file */
    const char *files[] = {missing, dangling, folder, link, later, NULL};
    CHECK(rl_tls_first_present(files, 0) == link);
    const char *dirs[] = {missing, file, folder, NULL};
    CHECK(rl_tls_first_present(dirs, 1) == folder);
    const char *none[] = {missing, dangling, NULL};
    CHECK(rl_tls_first_present(none, 0) == NULL && rl_tls_first_present(none, 1) == NULL);

    unlink(link), unlink(dangling), unlink(file), unlink(later), rmdir(folder), rmdir(dir);
}
