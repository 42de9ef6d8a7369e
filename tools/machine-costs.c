/*
 * What a few machine-level operations cost on the machine this runs on: the costs that
 * bound a small `dra` process on the project's CI machine kind (BENCHMARKS.md, "Where a
 * small run's last milliseconds go"). Not part of the product; nothing here is timed by
 * tests.
 *
 *     cc -O2 -pthread tools/machine-costs.c -o /tmp/machine-costs && /tmp/machine-costs
 *
 * Each line is the median of ROUNDS measurements. Memory is measured in a new process each
 * time, as a command meets it: pages a process has just freed come back to it far cheaper.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { ROUNDS = 15 };
static const size_t HUGE = 2u << 20;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints the median of `samples`; a negative sample is a measurement that failed. */
static void report(const char *what, double *samples, int n, const char *unit) {
    qsort(samples, n, sizeof *samples, by_value);
    if (samples[0] < 0) {
        printf("%-58s not measured: the call failed here\n", what);
        return;
    }
    printf("%-58s median %9.2f %s  (min %.2f, max %.2f)\n", what, samples[n / 2], unit,
           samples[0], samples[n - 1]);
}

/* A 2 MiB-aligned anonymous region of `size` bytes, transparent huge pages asked or refused. */
static char *region(size_t size, int huge) {
    char *p = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    char *aligned = (char *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    madvise(aligned, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return aligned;
}

/* Runs `measure` in a new process and returns what it measured. */
static double in_new_process(double (*measure)(void)) {
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0) {
        double value = measure();
        if (write(fds[1], &value, sizeof value) != sizeof value) _exit(1);
        _exit(0);
    }
    /* Only the child writes: a child that dies without writing ends the read at once. */
    close(fds[1]);
    double value = -1;
    if (read(fds[0], &value, sizeof value) != sizeof value) value = -1;
    waitpid(child, NULL, 0);
    close(fds[0]);
    return value;
}

static const size_t FOUR = 4u << 20;

static double fresh_huge_page(void) {
    char *p = region(HUGE, 1);
    double t0 = now_us();
    p[0] = 1; /* the kernel zeroes a fresh 2 MiB page */
    return now_us() - t0;
}

static double huge_page_in_place(void) {
    char *p = region(HUGE, 1);
    p[0] = 1;
    double t0 = now_us();
    memset(p, 2, HUGE);
    return now_us() - t0;
}

static double huge_page_given_back(void) {
    char *p = region(HUGE, 1);
    p[0] = 1;
    madvise(p, HUGE, MADV_DONTNEED);
    double t0 = now_us();
    p[0] = 1; /* most likely the same physical page, just freed */
    return now_us() - t0;
}

static double small_pages_touched(void) {
    char *p = region(FOUR, 0);
    double t0 = now_us();
    for (size_t i = 0; i < FOUR; i += 4096) p[i] = 1;
    return now_us() - t0;
}

static double small_pages_populated(void) {
    char *p = region(FOUR, 0);
    double t0 = now_us();
    if (madvise(p, FOUR, MADV_POPULATE_WRITE) != 0) return -1; /* before Linux 5.14 */
    return now_us() - t0;
}

static double huge_pages_populated(void) {
    char *p = region(FOUR, 1);
    double t0 = now_us();
    if (madvise(p, FOUR, MADV_POPULATE_WRITE) != 0) return -1; /* before Linux 5.14 */
    return now_us() - t0;
}

/* Runs the three measurements ROUNDS times each, in turn, and reports them. */
static void measure_in_new_processes(const char *what[3], double (*measure[3])(void)) {
    double samples[3][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int m = 0; m < 3; m++) samples[m][r] = in_new_process(measure[m]);
    for (int m = 0; m < 3; m++) report(what[m], samples[m], ROUNDS, "us");
}

struct start {
    double spawned_at;
    double ran_at;
    int cpu;
};

static void *note_start(void *arg) {
    struct start *s = arg;
    s->ran_at = now_us();
    s->cpu = sched_getcpu();
    return NULL;
}

int main(void) {
    double t[ROUNDS], u[ROUNDS];

    for (int r = 0; r < ROUNDS; r++) {
        unsigned a, b, c, d;
        double t0 = now_us();
        for (int i = 0; i < 20; i++) __cpuid_count(7, 0, a, b, c, d);
        t[r] = (now_us() - t0) / 20;
        t0 = now_us();
        for (int i = 0; i < 200; i++) syscall(SYS_getppid);
        u[r] = (now_us() - t0) / 200;
    }
    report("cpuid instruction", t, ROUNDS, "us");
    report("system call (getppid)", u, ROUNDS, "us");

    measure_in_new_processes((const char *[]){"first touch of a fresh transparent huge page (2 MiB)",
                                              "memset of 2 MiB already in place",
                                              "first touch of a huge page the process just gave back"},
                             (double (*[])(void)){fresh_huge_page, huge_page_in_place,
                                                  huge_page_given_back});
    measure_in_new_processes((const char *[]){"4 MiB of 4 KiB pages, touched one by one",
                                              "4 MiB of 4 KiB pages, populated by one madvise",
                                              "4 MiB of huge pages, populated by one madvise"},
                             (double (*[])(void)){small_pages_touched, small_pages_populated,
                                                  huge_pages_populated});

    int same_cpu = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct start s = {0};
        pthread_t thread;
        /* Busy first, as a command's main thread is when it starts its helper. */
        for (double until = now_us() + 500; now_us() < until;) {
        }
        int cpu = sched_getcpu();
        s.spawned_at = now_us();
        if (pthread_create(&thread, NULL, note_start, &s) != 0) {
            perror("pthread_create");
            return 1;
        }
        double returned = now_us();
        pthread_join(thread, NULL);
        t[r] = returned - s.spawned_at;
        u[r] = s.ran_at - s.spawned_at;
        same_cpu += s.cpu == cpu;
    }
    report("pthread_create, until it returns to the starter", t, ROUNDS, "us");
    report("pthread_create, until the new thread runs", u, ROUNDS, "us");
    printf("new threads that first ran on their starter's CPU: %d of %d\n", same_cpu, ROUNDS);
    return 0;
}
