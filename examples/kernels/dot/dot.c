/* Dot product of two vectors of LEN doubles, REPS times. Knobs: ACC (the
 * number of independent accumulators, which breaks the add chain's latency)
 * and the OpenMP threads of the reduction. */
#include "../common.h"

#ifndef LEN
#define LEN 4000000
#endif
#ifndef REPS
#define REPS 40
#endif
#ifndef ACC
#define ACC 1
#endif

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  double *a = malloc(sizeof(double) * LEN), *b = malloc(sizeof(double) * LEN);
  for (long i = 0; i < LEN; ++i)
    a[i] = hk_rand() - 0.5, b[i] = hk_rand() - 0.5;
  double results[REPS];
  for (int r = 0; r < REPS; ++r) {
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
      double acc[ACC] = {0};
#pragma omp for schedule(static)
      for (long i = 0; i < LEN / ACC * ACC; i += ACC)
        for (int u = 0; u < ACC; ++u)
          acc[u] += a[i + u] * b[i + u];
      for (int u = 0; u < ACC; ++u)
        total += acc[u];
    }
    for (long i = LEN / ACC * ACC; i < LEN; ++i)
      total += a[i] * b[i];
    results[r] = total;
    a[r] *= 1.5; /* the next repetition computes something else */
  }
  for (int r = 0; r < REPS; ++r)
    printf("%.12e\n", results[r]);
  free(a), free(b);
  return 0;
}
