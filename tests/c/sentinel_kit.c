#include "sentinel_kit.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The sentinel names the master (it read its configuration and answers). */
static int knows_master(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name mymaster");
        ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
        if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return ok;
}

int sentinel_start(test_server *s, const test_server *master) {
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/rlsentinel.XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    char conf[128];
    snprintf(conf, sizeof conf, "%s/sentinel.conf", s->dir);
    for (int attempt = 0; attempt < 10; attempt++) {
        s->port = free_port();
        FILE *f = fopen(conf, "w");
        if (!f) return -1;
        fprintf(f, "port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n",
                s->port, s->dir, master->port);
        fclose(f);
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test run */
            char log[128];
            snprintf(log, sizeof log, "%s/sentinel.log", s->dir);
            if (!freopen(log, "a", stdout) || !freopen(log, "a", stderr)) _exit(126);
            execlp("redis-server", "redis-server", conf, "--sentinel", (char *)NULL);
            _exit(127);
        }
        s->pid = pid;
        for (int wait = 0; wait < 100; wait++) {
            if (knows_master(s->port)) {
                snprintf(s->url, sizeof s->url, "redis+sentinel://127.0.0.1:%d/mymaster", s->port);
                return 0;
            }
            int status;
            if (waitpid(pid, &status, WNOHANG) == pid) break; /* port taken: try another */
            sleep_ms(50);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        s->pid = 0;
    }
    return -1;
}
