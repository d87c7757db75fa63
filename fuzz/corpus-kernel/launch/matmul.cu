// Dense matrix multiply on the GPU, C = A * B (N x N, float), one thread per
// element of C. Knobs: BLOCK (threads per block edge) and SHARED (1: tiles
// of A and B staged in shared memory; 0: every operand read from global).
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef N
#define N 1024
#endif
#ifndef BLOCK
#define BLOCK 16
#endif
#ifndef SHARED
#define SHARED 0
#endif

__global__ void matmul(const float *A, const float *B, float *C) {
  int row = blockIdx.y * BLOCK + threadIdx.y, col = blockIdx.x * BLOCK + threadIdx.x;
  float s = 0;
#if SHARED
  __shared__ float As[BLOCK][BLOCK], Bs[BLOCK][BLOCK];
  for (int t = 0; t < N; t += BLOCK) {
    As[threadIdx.y][threadIdx.x] = row < N && t + threadIdx.x < N ? A[row * N + t + threadIdx.x] : 0;
    Bs[threadIdx.y][threadIdx.x] = col < N && t + threadIdx.y < N ? B[(t + threadIdx.y) * N + col] : 0;
    __syncthreads();
    for (int k = 0; k < BLOCK; ++k)
      s += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
#else
  if (row < N && col < N)
    for (int k = 0; k < N; ++k)
      s += A[row * N + k] * B[k * N + col];
#endif
  if (row < N && col < N)
    C[row * N + col] = s;
}

int main(int argc, char **argv) {
  unsigned long long state = (argc > 1 ? strtoull(argv[1], nullptr, 10) : 1) * 2654435761ull + 1;
  auto rnd = [&] { state = state * 6364136223846793005ull + 1442695040888963407ull; return float(state >> 40) / 16777216.0f - 0.5f; };
  std::vector<float> A(N * N), B(N * N), C(N * N);
  for (auto &v : A) v = rnd();
  for (auto &v : B) v = rnd();
  float *dA, *dB, *dC;
  cudaMalloc(&dA, N * N * sizeof(float)), cudaMalloc(&dB, N * N * sizeof(float)), cudaMalloc(&dC, N * N * sizeof(float));
  cudaMemcpy(dA, A.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(BLOCK, BLOCK), grid((N + BLOCK - 1) / BLOCK, (N + BLOCK - 1) / BLOCK);
  matmul<<<grid, block>>>(dA, dB, dC);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  cudaMemcpy(C.data(), dC, N * N * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (float v : C) sum += v;
  printf("C_sum %.6e\n", sum);
  for (int i = 0; i < N * N; i += N * N / 128) printf("%.6e\n", C[i]);
  cudaFree(dA), cudaFree(dB), cudaFree(dC);
  return 0;
}
