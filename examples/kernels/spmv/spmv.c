/* Sparse matrix-vector product y = A x in CSR form, REPS times (x takes y's
 * normalised value between repetitions). ROWS rows with NNZ_ROW random
 * columns each. Knobs: the OpenMP threads and schedule of the row loop, and
 * UNROLL (the inner loop's unroll factor, with a remainder loop). */
#include "../common.h"

#ifndef ROWS
#define ROWS 200000
#endif
#ifndef NNZ_ROW
#define NNZ_ROW 16
#endif
#ifndef REPS
#define REPS 10
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  long nnz = (long)ROWS * NNZ_ROW;
  long *rowptr = malloc(sizeof(long) * (ROWS + 1));
  int *col = malloc(sizeof(int) * nnz);
  double *val = malloc(sizeof(double) * nnz), *x = malloc(sizeof(double) * ROWS), *y = malloc(sizeof(double) * ROWS);
  for (long r = 0; r <= ROWS; ++r)
    rowptr[r] = r * NNZ_ROW;
  for (long k = 0; k < nnz; ++k) {
    col[k] = (int)(hk_rand() * ROWS);
    val[k] = hk_rand() - 0.5;
  }
  for (long r = 0; r < ROWS; ++r)
    x[r] = hk_rand();
  for (int rep = 0; rep < REPS; ++rep) {
#pragma omp parallel for schedule(runtime)
    for (long r = 0; r < ROWS; ++r) {
      double s = 0;
      long k = rowptr[r], end = rowptr[r + 1];
      for (; k + UNROLL <= end; k += UNROLL)
        for (int u = 0; u < UNROLL; ++u)
          s += val[k + u] * x[col[k + u]];
      for (; k < end; ++k)
        s += val[k] * x[col[k]];
      y[r] = s;
    }
    double norm = 0;
    for (long r = 0; r < ROWS; ++r)
      norm += y[r] * y[r];
    for (long r = 0; r < ROWS; ++r)
      x[r] = y[r] / (norm > 0 ? norm : 1);
  }
  hk_print("y", y, ROWS, 128);
  free(rowptr), free(col), free(val), free(x), free(y);
  return 0;
}
