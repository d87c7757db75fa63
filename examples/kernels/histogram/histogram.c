/* Histogram of COUNT values into BINS bins (exact integer results). Knobs:
 * PRIVATE (1: each OpenMP thread fills a private histogram, merged at the
 * end; 0: one shared histogram updated serially) and the OpenMP threads. */
#include "../common.h"

#ifndef COUNT
#define COUNT 16000000
#endif
#ifndef BINS
#define BINS 256
#endif
#ifndef PRIVATE
#define PRIVATE 0
#endif

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  unsigned *data = malloc(sizeof(unsigned) * COUNT);
  for (long i = 0; i < COUNT; ++i) /* skewed: low bins are hotter */
    data[i] = (unsigned)(hk_rand() * hk_rand() * 4294967295.0);
  long hist[BINS] = {0};
  for (int rep = 0; rep < 4; ++rep) {
#if PRIVATE
#pragma omp parallel
    {
      long mine[BINS] = {0};
#pragma omp for schedule(runtime)
      for (long i = 0; i < COUNT; ++i)
        mine[(data[i] >> 8) % BINS]++;
#pragma omp critical
      for (int b = 0; b < BINS; ++b)
        hist[b] += mine[b];
    }
#else
    for (long i = 0; i < COUNT; ++i)
      hist[(data[i] >> 8) % BINS]++;
#endif
  }
  for (int b = 0; b < BINS; ++b)
    printf("%ld\n", hist[b]);
  free(data);
  return 0;
}
