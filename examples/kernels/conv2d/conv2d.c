/* 2-D convolution of an H x W image with a K x K filter (valid region).
 * Knobs: LOOP_ORDER (0: filter loops outside the column loop, 1: inside),
 * BLOCK_J (column blocking; W: none) and the OpenMP threads of the row loop. */
#include "../common.h"

#ifndef H
#define H 2048
#endif
#ifndef W
#define W 2048
#endif
#ifndef K
#define K 5
#endif
#ifndef LOOP_ORDER
#define LOOP_ORDER 1
#endif
#ifndef BLOCK_J
#define BLOCK_J 2048
#endif

static double img[H][W], out[H - K + 1][W - K + 1], filt[K][K];

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  for (int i = 0; i < H; ++i)
    for (int j = 0; j < W; ++j)
      img[i][j] = hk_rand();
  for (int a = 0; a < K; ++a)
    for (int b = 0; b < K; ++b)
      filt[a][b] = hk_rand() - 0.5;
  const int OH = H - K + 1, OW = W - K + 1;
  for (int jj = 0; jj < OW; jj += BLOCK_J) {
    int je = jj + BLOCK_J < OW ? jj + BLOCK_J : OW;
#pragma omp parallel for schedule(runtime)
    for (int i = 0; i < OH; ++i) {
#if LOOP_ORDER == 0
      for (int j = jj; j < je; ++j)
        out[i][j] = 0;
      for (int a = 0; a < K; ++a)
        for (int b = 0; b < K; ++b)
          for (int j = jj; j < je; ++j)
            out[i][j] += filt[a][b] * img[i + a][j + b];
#else
      for (int j = jj; j < je; ++j) {
        double s = 0;
        for (int a = 0; a < K; ++a)
          for (int b = 0; b < K; ++b)
            s += filt[a][b] * img[i + a][j + b];
        out[i][j] = s;
      }
#endif
    }
  }
  hk_print("out", &out[0][0], (long)OH * OW, 128);
  return 0;
}
