/* All-pairs n-body: STEPS leapfrog steps of NB bodies with softened gravity.
 * Knobs: BLOCK (the j-loop is blocked so a block of bodies stays in cache;
 * NB: none) and the OpenMP threads and schedule of the i loop. */
#include "../common.h"
#include <math.h>

#ifndef NB
#define NB 2048
#endif
#ifndef STEPS
#define STEPS 10
#endif
#ifndef BLOCK
#define BLOCK 2048
#endif

static double px[NB], py[NB], pz[NB], vx[NB], vy[NB], vz[NB], m[NB], ax[NB], ay[NB], az[NB];

int main(int argc, char **argv) {
  hk_seed(argc, argv);
  for (int i = 0; i < NB; ++i) {
    px[i] = hk_rand(), py[i] = hk_rand(), pz[i] = hk_rand();
    vx[i] = vy[i] = vz[i] = 0;
    m[i] = 0.5 + hk_rand();
  }
  const double dt = 1e-4, eps2 = 1e-3;
  for (int s = 0; s < STEPS; ++s) {
    for (int i = 0; i < NB; ++i)
      ax[i] = ay[i] = az[i] = 0;
    for (int jj = 0; jj < NB; jj += BLOCK) {
      int je = jj + BLOCK < NB ? jj + BLOCK : NB;
#pragma omp parallel for schedule(runtime)
      for (int i = 0; i < NB; ++i) {
        double fx = 0, fy = 0, fz = 0;
        for (int j = jj; j < je; ++j) {
          double dx = px[j] - px[i], dy = py[j] - py[i], dz = pz[j] - pz[i];
          double r2 = dx * dx + dy * dy + dz * dz + eps2;
          double inv = m[j] / (r2 * sqrt(r2));
          fx += dx * inv, fy += dy * inv, fz += dz * inv;
        }
        ax[i] += fx, ay[i] += fy, az[i] += fz;
      }
    }
    for (int i = 0; i < NB; ++i) {
      vx[i] += dt * ax[i], vy[i] += dt * ay[i], vz[i] += dt * az[i];
      px[i] += dt * vx[i], py[i] += dt * vy[i], pz[i] += dt * vz[i];
    }
  }
  hk_print("px", px, NB, 64);
  hk_print("vy", vy, NB, 64);
  return 0;
}
