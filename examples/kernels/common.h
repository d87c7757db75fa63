/* Shared by hone's example kernels: a seeded generator whose sequence is the
 * same on every machine, and a checksum printer. Each program reads
 * `prog [SEED]`, computes, and prints its results as numbers on stdout. */
#ifndef HONE_KERNELS_COMMON_H
#define HONE_KERNELS_COMMON_H
#include <stdio.h>
#include <stdlib.h>

static unsigned long long hk_state = 1;
static inline void hk_seed(int argc, char **argv) {
  unsigned long long s = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
  hk_state = s * 2654435761ull + 0x9E3779B97F4A7C15ull;
}
/* Uniform in [0, 1). */
static inline double hk_rand(void) {
  hk_state = hk_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(hk_state >> 11) * (1.0 / 9007199254740992.0);
}
/* Prints `count` evenly spaced elements of `v` (length n) and two sums, so a
 * wrong element anywhere changes what is printed with high probability. */
static inline void hk_print(const char *name, const double *v, long n, long count) {
  double sum = 0, weighted = 0;
  for (long i = 0; i < n; ++i) {
    sum += v[i];
    weighted += v[i] * (double)((i % 97) + 1);
  }
  printf("%s_sum %.12e\n%s_weighted %.12e\n", name, sum, name, weighted);
  long step = n / count > 0 ? n / count : 1;
  for (long i = 0; i < n; i += step)
    printf("%.12e\n", v[i]);
}
#endif
