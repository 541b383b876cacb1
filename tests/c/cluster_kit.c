#include "cluster_kit.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static char url[512];
static pid_t child = -1;
static int to_child = -1;

static void stop_cluster(void) {
    if (child <= 0) return;
    close(to_child); /* the script stops its nodes when its stdin closes */
    waitpid(child, NULL, 0);
    child = -1;
}

const char *test_cluster_url(void) {
    if (url[0]) return url;
    int in[2], out[2];
    /* close-on-exec: a server a later test starts must not hold the script's stdin open, or the
     * script never sees it close and never stops its nodes */
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return NULL;
    child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the test run */
        dup2(in[0], 0), dup2(out[1], 1);
        close(in[1]), close(out[0]);
        execlp("python3", "python3", "scripts/redis-cluster", (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    to_child = in[1];
    FILE *f = fdopen(out[0], "r");
    if (!f || !fgets(url, sizeof url, f) || strncmp(url, "redis+cluster://", 16) != 0) {
        fprintf(stderr, "cluster_kit: scripts/redis-cluster did not start a cluster\n");
        url[0] = '\0';
        if (f) fclose(f);
        stop_cluster();
        return NULL;
    }
    fclose(f);
    url[strcspn(url, "\n")] = '\0';
    atexit(stop_cluster);
    return url;
}
