#!/usr/bin/env bash
# What one atomic read-modify-write costs on this machine, in user time: a `lock xadd` back to
# back against a plain add, and one among ~120 instructions of loads and stores (as in a
# request's work) against the same work with a plain add. Callgrind counts an atomic as one
# instruction; this says how many plain ones it is worth (bench/README.md, "wrk's instructions
# beside hubload's").
#
# Usage: bench/atomic-cost.sh [ROUNDS]   (default 3; needs a C compiler)
set -euo pipefail
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/atomic.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
static double user_s(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6;
}
static uint64_t buf[4096];
__attribute__((noinline)) static uint64_t work(uint64_t i, int atomic, uint64_t *ctr) {
    uint64_t s = i;
    for (int k = 0; k < 24; k++) {
        uint64_t j = (i * 7 + k * 131) & 4095;
        s += buf[j];
        buf[(j + 17) & 4095] = s;
    }
    if (atomic) __atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED);
    else *(volatile uint64_t *)ctr += 1;
    return s;
}
int main(void) {
    const long n = 50000000L;
    volatile uint64_t x = 0;
    uint64_t y = 0, c = 0, s = 0;
    double t0 = user_s();
    for (long i = 0; i < 4 * n; i++) x = x + 1;
    double t1 = user_s();
    for (long i = 0; i < 4 * n; i++) __atomic_fetch_add(&y, 1, __ATOMIC_RELAXED);
    double t2 = user_s();
    for (long i = 0; i < n; i++) s += work(i, 0, &c);
    double t3 = user_s();
    for (long i = 0; i < n; i++) s += work(i, 1, &c);
    double t4 = user_s();
    printf("back to back: plain add %.2f ns, lock xadd %.2f ns; among other work: +%.2f ns per atomic\n",
           (t1 - t0) / (4 * n) * 1e9, (t2 - t1) / (4 * n) * 1e9, ((t4 - t3) - (t3 - t2)) / n * 1e9);
    return (int)((s + y) & 1);
}
C
cc -O2 -o "$WORK/atomic" "$WORK/atomic.c"
for _ in $(seq "${1:-3}"); do "$WORK/atomic"; done
