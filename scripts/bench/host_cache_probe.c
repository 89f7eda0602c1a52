/* host-cache-probe: how long one dependent load takes over a buffer of a
 * few MiB, now -- a reading of the host's caches for the lab benches.
 *
 * This machine is a VM sharing its host's L3 and memory with other
 * tenants. In a "slow spell" they take the L3: a chase over 4 MiB, which
 * fits the L3 when the host is steady, then runs 5-8 times slower, and a
 * lab's costs double meanwhile (scripts/bench/cluster_validation.md,
 * 2026-12-03). The benches run this beside every lab measurement and flag
 * or repeat the ones measured in a spell (host_probe.py).
 *
 * The buffer holds one pointer per 64-byte cache line, chained in one
 * random cycle (Sattolo's shuffle), so every load waits for the previous
 * one and no prefetcher can guess the next line. The loads are timed in
 * chunks of a few hundred microseconds and the median chunk is reported:
 * on a busy host the probe is preempted now and then, and a preempted
 * chunk is an outlier, not a reading.
 *
 * usage: host-cache-probe [--mib N] [--loads N] [--repeat N]
 * prints one JSON object a line per reading:
 *   {"mib": 4, "loads": 1048576, "ns_per_load": 15.8, "p90_ns_per_load": 16.4}
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE_BYTES 64
#define SLOTS_PER_LINE (LINE_BYTES / sizeof(size_t))
#define CHUNK_LOADS 16384           /* ~0.25 ms in L3, ~2 ms in memory */
#define MAX_MIB 4096
#define MAX_LOADS (1ull << 32)
#define MAX_REPEAT 100000

static const char *program = "host-cache-probe";

static void usage_error(const char *key, const char *value, const char *expected)
{
    fprintf(stderr, "%s: %s: '%s': expected %s\n", program, key, value, expected);
    exit(2);
}

static uint64_t whole_number(const char *key, const char *value, uint64_t lo, uint64_t hi,
                             const char *expected)
{
    char *end;
    errno = 0;
    if (value == NULL) {
        fprintf(stderr, "%s: %s: no value: expected %s\n", program, key, expected);
        exit(2);
    }
    if (*value < '0' || *value > '9')
        usage_error(key, value, expected);
    unsigned long long n = strtoull(value, &end, 10);
    if (errno || *end || n < lo || n > hi)
        usage_error(key, value, expected);
    return n;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* xorshift64*: the same chain every run, so readings compare */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

/* line i's first slot holds the index of the next line's first slot */
static size_t *chained_lines(size_t lines)
{
    size_t *buffer = aligned_alloc(LINE_BYTES, lines * LINE_BYTES);
    size_t *order = malloc(lines * sizeof *order);
    if (buffer == NULL || order == NULL) {
        fprintf(stderr, "%s: cannot allocate %zu MiB\n", program, lines * LINE_BYTES >> 20);
        exit(1);
    }
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (size_t i = lines - 1; i > 0; i--) {          /* Sattolo: one cycle through all */
        size_t j = (size_t)(next_random(&state) % i);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    memset(buffer, 0, lines * LINE_BYTES);
    for (size_t i = 0; i < lines; i++)
        buffer[order[i] * SLOTS_PER_LINE] = order[(i + 1) % lines] * SLOTS_PER_LINE;
    free(order);
    return buffer;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint64_t mib = 4, loads = 1u << 20, repeat = 1;
    for (int i = 1; i < argc; i++) {
        const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(key, "--mib") == 0)
            mib = whole_number(key, value, 1, MAX_MIB, "a whole number of MiB, 1-4096");
        else if (strcmp(key, "--loads") == 0)
            loads = whole_number(key, value, CHUNK_LOADS, MAX_LOADS,
                                 "a number of loads, 16384 to 2^32");
        else if (strcmp(key, "--repeat") == 0)
            repeat = whole_number(key, value, 1, MAX_REPEAT, "a count, 1-100000");
        else {
            fprintf(stderr, "%s: unknown argument '%s' (usage: %s [--mib N] [--loads N]"
                    " [--repeat N])\n", program, key, program);
            return 2;
        }
        i++;
    }
    size_t lines = (size_t)(mib << 20) / LINE_BYTES;
    size_t *buffer = chained_lines(lines);
    size_t chunks = (size_t)(loads / CHUNK_LOADS);
    double *chunk_ns = malloc(chunks * sizeof *chunk_ns);
    if (chunk_ns == NULL) {
        fprintf(stderr, "%s: cannot allocate %zu chunk times\n", program, chunks);
        return 1;
    }
    size_t p = 0;
    for (size_t i = 0; i < lines; i++)                 /* one lap first: the buffer cached */
        p = buffer[p];
    for (uint64_t r = 0; r < repeat; r++) {
        for (size_t c = 0; c < chunks; c++) {
            uint64_t t0 = now_ns();
            for (unsigned i = 0; i < CHUNK_LOADS; i++)
                p = buffer[p];
            chunk_ns[c] = (double)(now_ns() - t0) / CHUNK_LOADS;
        }
        qsort(chunk_ns, chunks, sizeof *chunk_ns, by_value);
        printf("{\"mib\": %" PRIu64 ", \"loads\": %zu, \"ns_per_load\": %.2f, "
               "\"p90_ns_per_load\": %.2f}\n", mib, chunks * CHUNK_LOADS,
               chunk_ns[chunks / 2], chunk_ns[chunks * 9 / 10]);
        fflush(stdout);
    }
    free(chunk_ns);
    free(buffer);
    /* the chain's end, so the loads are not optimised away */
    return p == (size_t)-1 ? 3 : 0;
}
