/* The BLAS's dgemm (OpenBLAS from Debian) on the problem of PolyBench's gemm, for bench/gemm-peak.py:
 * C = alpha A B + beta C, row-major, NI x NK times NK x NJ. One call warms the library up (its threads
 * start), then one call is timed alone: the library at its best. Prints that call's seconds on a line
 * of its own (as PolyBench's -DPOLYBENCH_TIME does), then a checksum of C on stderr.
 *   blas_dgemm NI NJ NK */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: blas_dgemm NI NJ NK\n");
    return 2;
  }
  int ni = atoi(argv[1]), nj = atoi(argv[2]), nk = atoi(argv[3]);
  if (ni <= 0 || nj <= 0 || nk <= 0) {
    fprintf(stderr, "blas_dgemm: sizes must be positive\n");
    return 2;
  }
  double *A = malloc(sizeof(double) * ni * nk), *B = malloc(sizeof(double) * nk * nj),
         *C = malloc(sizeof(double) * ni * nj);
  if (!A || !B || !C)
    return 1;
  double alpha = 1.5, beta = 1.2;
  /* Any values: the time of dgemm does not depend on them. */
  for (long i = 0; i < (long)ni * nj; i++)
    C[i] = (double)(i % 7) * 0.25;
  for (long i = 0; i < (long)ni * nk; i++)
    A[i] = (double)(i % 11) * 0.125;
  for (long i = 0; i < (long)nk * nj; i++)
    B[i] = (double)(i % 13) * 0.0625;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, nj, nk, alpha, A, nk, B, nj, beta, C, nj);
  double t0 = now();
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, nj, nk, alpha, A, nk, B, nj, beta, C, nj);
  printf("%0.6f\n", now() - t0);
  double sum = 0;
  for (long i = 0; i < (long)ni * nj; i++)
    sum += C[i];
  fprintf(stderr, "checksum %.10g\n", sum);
  free(A);
  free(B);
  free(C);
  return 0;
}
