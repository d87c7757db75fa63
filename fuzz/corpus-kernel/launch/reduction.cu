// Sum of LEN floats on the GPU: each block reduces a stretch in shared
// memory, the host adds the blocks' partial sums. Knobs: THREADS (per block),
// ITEMS (elements each thread adds before the tree; more work per thread),
// SEQUENTIAL (1: sequential addressing in the tree; 0: interleaved, which
// diverges and conflicts on shared-memory banks).
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef LEN
#define LEN (1 << 24)
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SEQUENTIAL
#define SEQUENTIAL 0
#endif

__global__ void reduce(const float *in, float *partial) {
  __shared__ float s[THREADS];
  unsigned t = threadIdx.x;
  size_t base = (size_t)blockIdx.x * THREADS * ITEMS + t;
  float v = 0;
  for (int k = 0; k < ITEMS; ++k)
    if (base + (size_t)k * THREADS < LEN)
      v += in[base + (size_t)k * THREADS];
  s[t] = v;
  __syncthreads();
#if SEQUENTIAL
  for (unsigned stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
#else
  for (unsigned stride = 1; stride < THREADS; stride <<= 1) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    __syncthreads();
  }
#endif
  if (t == 0) partial[blockIdx.x] = s[0];
}

int main(int argc, char **argv) {
  unsigned long long state = (argc > 1 ? strtoull(argv[1], nullptr, 10) : 1) * 2654435761ull + 1;
  std::vector<float> x(LEN);
  for (auto &v : x) { state = state * 6364136223846793005ull + 1442695040888963407ull; v = float(state >> 40) / 16777216.0f; }
  const int blocks = (LEN + THREADS * ITEMS - 1) / (THREADS * ITEMS);
  float *dx, *dp;
  cudaMalloc(&dx, LEN * sizeof(float)), cudaMalloc(&dp, blocks * sizeof(float));
  cudaMemcpy(dx, x.data(), LEN * sizeof(float), cudaMemcpyHostToDevice);
  double total = 0;
  std::vector<float> partial(blocks);
  for (int rep = 0; rep < 20; ++rep) {
    reduce<<<blocks, THREADS>>>(dx, dp);
    cudaMemcpy(partial.data(), dp, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    total = 0;
    for (float p : partial) total += p;
  }
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  printf("sum %.8e\n", total);
  cudaFree(dx), cudaFree(dp);
  return 0;
}
