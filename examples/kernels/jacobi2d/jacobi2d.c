/* 2-D Jacobi: STEPS sweeps of the 5-point average over an N x N grid with
 * fixed borders. Knobs: BLOCK_J (column blocking of a sweep; N: none) and
 * the OpenMP threads and schedule of the row loop. */
#include "../common.h"

#ifndef N
#define N 1024
#endif
#ifndef STEPS
#define STEPS 60
#endif
#ifndef BLOCK_J
#define BLOCK_J 1024
#endif

static double U[N][N], V[N][N];

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      U[i][j] = V[i][j] = hk_rand();
  for (int t = 0; t < STEPS; ++t) {
    double (*src)[N] = t % 2 ? V : U, (*dst)[N] = t % 2 ? U : V;
    for (int jj = 1; jj < N - 1; jj += BLOCK_J) {
      int je = jj + BLOCK_J < N - 1 ? jj + BLOCK_J : N - 1;
#pragma omp parallel for schedule(runtime)
      for (int i = 1; i < N - 1; ++i)
        for (int j = jj; j < je; ++j)
          dst[i][j] = 0.2 * (src[i][j] + src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
    }
  }
  hk_print("U", STEPS % 2 ? &V[0][0] : &U[0][0], (long)N * N, 128);
  return 0;
}
