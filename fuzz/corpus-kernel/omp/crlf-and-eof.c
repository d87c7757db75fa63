#pragma omp for schedule(auto)
#pragma omp parallel