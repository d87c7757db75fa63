/* Dense matrix multiply C = A * B (N x N, double), naive but correct.
 * Knobs: TILE (tile edge of the i/j/k loops; N means untiled), LOOP_ORDER
 * (0: i-j-k, the textbook order, strided B; 1: i-k-j, unit stride), and the
 * OpenMP threads and schedule of the tile loop (OMP_NUM_THREADS, OMP_SCHEDULE). */
#include "../common.h"
#include <string.h>

#ifndef N
#define N 512
#endif
#ifndef TILE
#define TILE 512
#endif
#ifndef LOOP_ORDER
#define LOOP_ORDER 0
#endif

static double A[N][N], B[N][N], C[N][N];

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      A[i][j] = hk_rand() - 0.5;
      B[i][j] = hk_rand() - 0.5;
    }
  memset(C, 0, sizeof C);
#pragma omp parallel for schedule(runtime)
  for (int ii = 0; ii < N; ii += TILE)
    for (int kk = 0; kk < N; kk += TILE)
      for (int jj = 0; jj < N; jj += TILE) {
        int ie = ii + TILE < N ? ii + TILE : N, ke = kk + TILE < N ? kk + TILE : N, je = jj + TILE < N ? jj + TILE : N;
#if LOOP_ORDER == 0
        for (int i = ii; i < ie; ++i)
          for (int j = jj; j < je; ++j) {
            double s = C[i][j];
            for (int k = kk; k < ke; ++k)
              s += A[i][k] * B[k][j];
            C[i][j] = s;
          }
#else
        for (int i = ii; i < ie; ++i)
          for (int k = kk; k < ke; ++k) {
            double a = A[i][k];
            for (int j = jj; j < je; ++j)
              C[i][j] += a * B[k][j];
          }
#endif
      }
  hk_print("C", &C[0][0], (long)N * N, 128);
  return 0;
}
