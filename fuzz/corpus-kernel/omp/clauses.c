#pragma omp parallel for schedule(runtime)
  #  pragma omp for schedule ( dynamic , 16 ) nowait
#pragma omp parallel for \
    schedule(monotonic: static)
#pragma omp parallel for schedule(nonmonotonic, simd : guided, N / 4)
/* schedule(static) in a comment */
#pragma omp parallel for schedule(
#pragma omp parallel for schedule(dynamic
#pragma omp \
