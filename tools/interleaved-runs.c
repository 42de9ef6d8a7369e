/*
 * Times whole `dra simulate --node-pick first-fit -o json FILE` processes of several builds,
 * run by run in turn, so that a machine whose speed drifts within the hour (other tenants of
 * the host) slows every build alike. BENCHMARKS.md's comparisons from stop 46 on come from it.
 *
 *     cc -O2 tools/interleaved-runs.c -o /tmp/interleaved-runs
 *     /tmp/interleaved-runs RUNS FILE BINARY...
 *
 * A BINARY written NAME=VALUE@PATH runs PATH with NAME=VALUE added to its environment (a
 * build's switch for an experiment). Five warm-up rounds first, then RUNS rounds; for each
 * binary it prints the fastest run, the 10th and 25th percentiles and the median, in ms.
 * Output goes to /dev/null, as with `hyperfine -N --output=null`. Not built by Cargo.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_BINARIES 16
#define MAX_ENV 512

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run_once(char *path, char *file, char **env, posix_spawn_file_actions_t *to_null) {
    char *argv[] = {path, "simulate", "--node-pick", "first-fit", "-o", "json", file, NULL};
    struct timespec start, end;
    pid_t pid;
    int status;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (posix_spawn(&pid, path, to_null, NULL, argv, env) != 0) {
        fprintf(stderr, "cannot start %s\n", path);
        exit(2);
    }
    waitpid(pid, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    /* 0: all scheduled, 1: some pending; anything else is a failed run. */
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        fprintf(stderr, "%s failed on %s\n", path, file);
        exit(2);
    }
    return (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc - 3 > MAX_BINARIES) {
        fprintf(stderr, "usage: %s RUNS FILE [NAME=VALUE@]BINARY... (at most %d)\n", argv[0],
                MAX_BINARIES);
        return 2;
    }
    int runs = atoi(argv[1]);
    char *file = argv[2];
    int binaries = argc - 3;
    if (runs < 1) {
        fprintf(stderr, "RUNS must be at least 1\n");
        return 2;
    }
    char *paths[MAX_BINARIES], *extra[MAX_BINARIES];
    static char *envs[MAX_BINARIES][MAX_ENV + 2];
    for (int b = 0; b < binaries; b++) {
        char *spec = argv[3 + b], *at = strchr(spec, '@');
        extra[b] = NULL;
        paths[b] = spec;
        if (at != NULL) {
            *at = '\0';
            extra[b] = spec;
            paths[b] = at + 1;
        }
        int n = 0;
        for (char **e = environ; *e != NULL && n < MAX_ENV; e++) envs[b][n++] = *e;
        if (extra[b] != NULL) envs[b][n++] = extra[b];
        envs[b][n] = NULL;
    }
    posix_spawn_file_actions_t to_null;
    posix_spawn_file_actions_init(&to_null);
    posix_spawn_file_actions_addopen(&to_null, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&to_null, 2, "/dev/null", O_WRONLY, 0);

    for (int round = 0; round < 5; round++)
        for (int b = 0; b < binaries; b++) run_once(paths[b], file, envs[b], &to_null);
    double *times = malloc(sizeof(double) * runs * binaries);
    if (times == NULL) return 2;
    for (int round = 0; round < runs; round++)
        for (int b = 0; b < binaries; b++)
            times[b * runs + round] = run_once(paths[b], file, envs[b], &to_null);
    for (int b = 0; b < binaries; b++) {
        double *t = times + b * runs;
        qsort(t, runs, sizeof(double), by_value);
        printf("%-40s %-16s fastest %.3f p10 %.3f p25 %.3f median %.3f ms\n", paths[b],
               extra[b] != NULL ? extra[b] : "", t[0], t[runs / 10], t[runs / 4], t[runs / 2]);
    }
    free(times);
    return 0;
}
