// 2-D Jacobi on the GPU: STEPS sweeps of the 5-point average over an N x N
// grid with fixed borders. Knobs: BX, BY (the thread block's shape; BX is
// the coalesced dimension).
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef N
#define N 2048
#endif
#ifndef STEPS
#define STEPS 50
#endif
#ifndef BX
#define BX 8
#endif
#ifndef BY
#define BY 8
#endif

__global__ void sweep(const double *src, double *dst) {
  int j = blockIdx.x * BX + threadIdx.x, i = blockIdx.y * BY + threadIdx.y;
  if (i < 1 || j < 1 || i >= N - 1 || j >= N - 1)
    return;
  dst[i * N + j] = 0.2 * (src[i * N + j] + src[(i - 1) * N + j] + src[(i + 1) * N + j] + src[i * N + j - 1] + src[i * N + j + 1]);
}

int main(int argc, char **argv) {
  unsigned long long state = (argc > 1 ? strtoull(argv[1], nullptr, 10) : 1) * 2654435761ull + 1;
  std::vector<double> U(N * N);
  for (auto &v : U) { state = state * 6364136223846793005ull + 1442695040888963407ull; v = double(state >> 11) / 9007199254740992.0; }
  double *a, *b;
  cudaMalloc(&a, N * N * sizeof(double)), cudaMalloc(&b, N * N * sizeof(double));
  cudaMemcpy(a, U.data(), N * N * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(b, U.data(), N * N * sizeof(double), cudaMemcpyHostToDevice);
  dim3 block(BX, BY), grid((N + BX - 1) / BX, (N + BY - 1) / BY);
  for (int t = 0; t < STEPS; ++t)
    sweep<<<grid, block>>>(t % 2 ? b : a, t % 2 ? a : b);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  cudaMemcpy(U.data(), STEPS % 2 ? b : a, N * N * sizeof(double), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (double v : U) sum += v;
  printf("U_sum %.12e\n", sum);
  for (int i = 0; i < N * N; i += N * N / 128) printf("%.12e\n", U[i]);
  cudaFree(a), cudaFree(b);
  return 0;
}
