/* Out-of-place transpose B = A^T of an N x N matrix, repeated REPS times.
 * Knobs: TILE (square tiles; 1 is the naive element order) and the OpenMP
 * threads of the tile-row loop. */
#include "../common.h"

#ifndef N
#define N 2048
#endif
#ifndef REPS
#define REPS 5
#endif
#ifndef TILE
#define TILE 1
#endif

static double A[N][N], B[N][N];

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      A[i][j] = hk_rand();
  for (int r = 0; r < REPS; ++r) {
#pragma omp parallel for schedule(runtime)
    for (int ii = 0; ii < N; ii += TILE)
      for (int jj = 0; jj < N; jj += TILE)
        for (int i = ii; i < ii + TILE && i < N; ++i)
          for (int j = jj; j < jj + TILE && j < N; ++j)
            B[j][i] = A[i][j] + (double)r;
  }
  hk_print("B", &B[0][0], (long)N * N, 128);
  return 0;
}
