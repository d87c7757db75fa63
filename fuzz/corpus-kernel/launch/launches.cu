#ifndef BLOCK
#define BLOCK 16
#endif
#define THREADS (2 * 128)
static const int WIDTH = 8;
template <typename T> __global__ void reduce(T *x) {}
__global__ void k(float *a) {}
int main(int argc, char **argv) {
  dim3 block(BLOCK, BLOCK), grid(64, 64);
  k<<<grid, block>>>(0);
  reduce<float><<<100, THREADS, THREADS * sizeof(float), 0>>>(0);
  k<<<1, dim3(WIDTH, 4, 2)>>>(0);
  k<<<grid, argc * 32>>>(0);
}
