// summa: a DISTAL-style 2-D matrix multiply C = A x B on Legion with the SUMMA decomposition, with the
// task, region and partition names and the launch structure of hone's model of the app
// (models/apps/summa.toml). Written for hone; CPU variants.
//
// A gx x gy grid of C blocks (G = gx * gy); K = gx steps. task_1/task_2/task_3 place A, B and C
// (each point writes a 2 x 2 group of sub-blocks); task_7 (one per C block) runs the K steps:
// task_6 (one step) launches task_5 over the block's 2 x 2 sub-blocks, and each task_5 runs two leaf
// GEMMs (task_4, q = 0 and 1) with step k's column panel of A and row panel of B. init_cublas is the
// GPU build's handle set-up, a no-op here. Entries of A and B are small integers, so C is exact and
// checked entry by entry against the product computed directly.
//
//   summa [-n 1024] [-gx 2] [-gy 2] [-check 0|1] [-hone:placements]   plus Legion's flags
#include "hone_app.h"

#include <cmath>

using namespace Legion;

namespace {

enum TaskIds : TaskID {
  TOP_LEVEL_ID = 1,
  INIT_CUBLAS_ID,
  TASK_1_ID,
  TASK_2_ID,
  TASK_3_ID,
  TASK_4_ID,
  TASK_5_ID,
  TASK_6_ID,
  TASK_7_ID
};
enum Fields : FieldID { FID_A = 1, FID_B, FID_C };
constexpr Color kSubColor = 7;          // the color of every sub-block partition (A_sub, B_sub, each block's C_sub)
constexpr ProjectionID kProjBase = 100; // 100 + 2a + b: (i, j) -> sub-block (2i + a, 2j + b); +4: through C_blk

struct Shape {
  long long n, gx, gy, K;
  // Boundaries of the 2*parts sub-block rows (or columns) of an n-long dimension.
  long long cut(long long m, long long parts) const { return m * n / (2 * parts); }
  Rect<2> sub(long long r, long long rparts, long long c, long long cparts) const {
    return Rect<2>(Point<2>(cut(r, rparts), cut(c, cparts)), Point<2>(cut(r + 1, rparts) - 1, cut(c + 1, cparts) - 1));
  }
};
struct StepArgs {
  Shape s;
  long long i, j, k;
};

double a_value(long long r, long long c) { return static_cast<double>((r * 7 + c * 3) % 11) - 5.0; }
double b_value(long long r, long long c) { return static_cast<double>((r * 5 + c * 2) % 13) - 6.0; }
double zero_value(long long, long long) { return 0.0; }

/// (i, j) -> sub-block (2i + a, 2j + b) of the partition below the upper bound; with `through_block`,
/// the upper bound is C_blk and the sub-block is in block (i, j)'s own C_sub.
class SubBlock : public ProjectionFunctor {
public:
  SubBlock(int a, int b, bool through_block) : a_(a), b_(b), through_(through_block) {}
  bool is_functional() const override { return true; }
  unsigned get_depth() const override { return through_ ? 1 : 0; }
  using ProjectionFunctor::project;
  LogicalRegion project(LogicalPartition upper, const DomainPoint &point, const Domain &) override {
    if (through_) {
      LogicalRegion block = runtime->get_logical_subregion_by_color(upper, point);
      LogicalPartition sub = runtime->get_logical_partition_by_color(block, kSubColor);
      return runtime->get_logical_subregion_by_color(sub, DomainPoint(Point<2>(a_, b_)));
    }
    return runtime->get_logical_subregion_by_color(upper, DomainPoint(Point<2>(2 * point[0] + a_, 2 * point[1] + b_)));
  }

private:
  int a_, b_;
  bool through_;
};

template <PrivilegeMode PM>
using Acc = FieldAccessor<PM, double, 2, coord_t, Realm::AffineAccessor<double, 2, coord_t>>;

void init_cublas_task(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx); // the CPU build has no handle to create
}

template <FieldID F, double (*VALUE)(long long, long long)>
void place_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  for (size_t r = 0; r < regions.size(); ++r) {
    Acc<LEGION_WRITE_DISCARD> acc(regions[r], F);
    for (PointInRectIterator<2> it(hone_app::rect_of<2>(rt, ctx, task->regions[r])); it(); it++)
      acc[*it] = VALUE(it[0], it[1]);
  }
}

/// The leaf: C_sub += A_sub x B_sub, through the instances' strides (any layout).
void task_4(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Rect<2> ra = hone_app::rect_of<2>(rt, ctx, task->regions[0]),
                rb = hone_app::rect_of<2>(rt, ctx, task->regions[1]),
                rc = hone_app::rect_of<2>(rt, ctx, task->regions[2]);
  Acc<LEGION_READ_ONLY> A(regions[0], FID_A), B(regions[1], FID_B);
  Acc<LEGION_READ_WRITE> C(regions[2], FID_C);
  const double *a = A.ptr(ra.lo), *b = B.ptr(rb.lo);
  double *c = C.ptr(rc.lo);
  const long long as0 = A.accessor.strides[0] / sizeof(double), as1 = A.accessor.strides[1] / sizeof(double);
  const long long bs0 = B.accessor.strides[0] / sizeof(double), bs1 = B.accessor.strides[1] / sizeof(double);
  const long long cs0 = C.accessor.strides[0] / sizeof(double), cs1 = C.accessor.strides[1] / sizeof(double);
  const long long rows = rc.hi[0] - rc.lo[0] + 1, cols = rc.hi[1] - rc.lo[1] + 1, inner = ra.hi[1] - ra.lo[1] + 1;
  for (long long r = 0; r < rows; ++r)
    for (long long k = 0; k < inner; ++k) {
      const double x = a[r * as0 + k * as1];
      for (long long col = 0; col < cols; ++col)
        c[r * cs0 + col * cs1] += x * b[k * bs0 + col * bs1];
    }
}

/// Two leaf GEMMs on this point's C sub-block: step k's two column panels of A, row panels of B.
void task_5(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const StepArgs &s = *static_cast<const StepArgs *>(task->args);
  const long long ii = task->index_point[0], jj = task->index_point[1];
  const LogicalRegion A = task->regions[0].region, B = task->regions[1].region, C = task->regions[2].region;
  const LogicalPartition a_sub = rt->get_logical_partition_by_color(ctx, A, kSubColor);
  const LogicalPartition b_sub = rt->get_logical_partition_by_color(ctx, B, kSubColor);
  for (long long q = 0; q < 2; ++q) {
    TaskLauncher l(TASK_4_ID, TaskArgument());
    l.add_region_requirement(RegionRequirement(
        rt->get_logical_subregion_by_color(ctx, a_sub, DomainPoint(Point<2>(2 * s.i + ii, 2 * s.k + q))),
        LEGION_READ_ONLY, LEGION_EXCLUSIVE, A));
    l.region_requirements.back().add_field(FID_A);
    l.add_region_requirement(RegionRequirement(
        rt->get_logical_subregion_by_color(ctx, b_sub, DomainPoint(Point<2>(2 * s.k + q, 2 * s.j + jj))),
        LEGION_READ_ONLY, LEGION_EXCLUSIVE, B));
    l.region_requirements.back().add_field(FID_B);
    l.add_region_requirement(RegionRequirement(C, LEGION_READ_WRITE, LEGION_EXCLUSIVE, C));
    l.region_requirements.back().add_field(FID_C);
    rt->execute_task(ctx, l);
  }
}

/// One step k of one C block: task_5 over the block's 2 x 2 sub-blocks.
void task_6(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const LogicalRegion A = task->regions[0].region, B = task->regions[1].region, C = task->regions[2].region;
  IndexTaskLauncher l(TASK_5_ID, Domain(Rect<2>(Point<2>(0, 0), Point<2>(1, 1))),
                      TaskArgument(task->args, task->arglen), ArgumentMap());
  l.add_region_requirement(RegionRequirement(A, 0, LEGION_READ_ONLY, LEGION_EXCLUSIVE, A));
  l.region_requirements.back().add_field(FID_A);
  l.add_region_requirement(RegionRequirement(B, 0, LEGION_READ_ONLY, LEGION_EXCLUSIVE, B));
  l.region_requirements.back().add_field(FID_B);
  l.add_region_requirement(RegionRequirement(rt->get_logical_partition_by_color(ctx, C, kSubColor), 0,
                                             LEGION_READ_WRITE, LEGION_EXCLUSIVE, C));
  l.region_requirements.back().add_field(FID_C);
  rt->execute_index_space(ctx, l);
}

/// One C block: the K steps in order.
void task_7(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  StepArgs args{*static_cast<const Shape *>(task->args), task->index_point[0], task->index_point[1], 0};
  for (args.k = 0; args.k < args.s.K; ++args.k) {
    TaskLauncher l(TASK_6_ID, TaskArgument(&args, sizeof(args)));
    for (unsigned r = 0; r < 3; ++r) {
      const RegionRequirement &mine = task->regions[r];
      l.add_region_requirement(RegionRequirement(mine.region, mine.privilege, LEGION_EXCLUSIVE, mine.region));
      l.region_requirements.back().add_field(r == 0 ? FID_A : r == 1 ? FID_B : FID_C);
    }
    rt->execute_task(ctx, l);
  }
}

void top_level_task(const Task *, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  Shape s{hone_app::arg_int("-n", 1024), hone_app::arg_int("-gx", 2), hone_app::arg_int("-gy", 2), 0};
  s.K = s.gx;
  const bool check = hone_app::arg_int("-check", 1) != 0;
  if (s.gx < 1 || s.gy < 1 || s.n < 2 * std::max(s.gx, s.gy)) {
    std::fprintf(stderr, "error: need gx, gy >= 1 and n >= 2 * max(gx, gy)\n");
    std::exit(2);
  }
  const Rect<2> whole(Point<2>(0, 0), Point<2>(s.n - 1, s.n - 1));
  LogicalRegion reg[3];
  const char *names[3] = {"A", "B", "C"};
  FieldSpace fs[3];
  IndexSpace spaces[3]; // one index space per matrix: each has its own sub-block partitions
  for (int m = 0; m < 3; ++m) {
    spaces[m] = rt->create_index_space(ctx, whole);
    fs[m] = rt->create_field_space(ctx);
    rt->create_field_allocator(ctx, fs[m]).allocate_field(sizeof(double), FID_A + m);
    reg[m] = rt->create_logical_region(ctx, spaces[m], fs[m]);
    hone_app::name(rt, reg[m], names[m]);
  }
  // The sub-block partitions: A is (2 gx) x (2 K), B (2 K) x (2 gy); C is cut into gx x gy blocks
  // (C_blk), each cut 2 x 2 (C_sub), so the steps of a block can work inside it.
  auto by_domain = [&](IndexSpace parent, long long rparts, long long cparts, long long rsub, long long csub,
                       long long r0, long long c0, Color color, PartitionKind kind) {
    std::map<DomainPoint, Domain> d;
    for (long long r = 0; r < rsub; ++r)
      for (long long c = 0; c < csub; ++c)
        d[DomainPoint(Point<2>(r, c))] = Domain(s.sub(r0 + r, rparts, c0 + c, cparts));
    IndexSpace colors = rt->create_index_space(ctx, Rect<2>(Point<2>(0, 0), Point<2>(rsub - 1, csub - 1)));
    return rt->create_partition_by_domain(ctx, parent, d, colors, true, kind, color);
  };
  IndexPartition a_ip =
      by_domain(spaces[0], s.gx, s.K, 2 * s.gx, 2 * s.K, 0, 0, kSubColor, LEGION_DISJOINT_COMPLETE_KIND);
  IndexPartition b_ip =
      by_domain(spaces[1], s.K, s.gy, 2 * s.K, 2 * s.gy, 0, 0, kSubColor, LEGION_DISJOINT_COMPLETE_KIND);
  std::map<DomainPoint, Domain> blocks;
  for (long long i = 0; i < s.gx; ++i)
    for (long long j = 0; j < s.gy; ++j)
      blocks[DomainPoint(Point<2>(i, j))] =
          Domain(Rect<2>(Point<2>(s.cut(2 * i, s.gx), s.cut(2 * j, s.gy)),
                         Point<2>(s.cut(2 * i + 2, s.gx) - 1, s.cut(2 * j + 2, s.gy) - 1)));
  IndexSpace block_colors = rt->create_index_space(ctx, Rect<2>(Point<2>(0, 0), Point<2>(s.gx - 1, s.gy - 1)));
  IndexPartition c_ip =
      rt->create_partition_by_domain(ctx, spaces[2], blocks, block_colors, true, LEGION_DISJOINT_COMPLETE_KIND);
  LogicalPartition a_sub = rt->get_logical_partition(ctx, reg[0], a_ip);
  LogicalPartition b_sub = rt->get_logical_partition(ctx, reg[1], b_ip);
  LogicalPartition c_blk = rt->get_logical_partition(ctx, reg[2], c_ip);
  hone_app::name(rt, a_sub, "A_sub");
  hone_app::name(rt, b_sub, "B_sub");
  hone_app::name(rt, c_blk, "C_blk");
  for (long long i = 0; i < s.gx; ++i)
    for (long long j = 0; j < s.gy; ++j) {
      LogicalRegion block = rt->get_logical_subregion_by_color(ctx, c_blk, DomainPoint(Point<2>(i, j)));
      IndexPartition sub =
          by_domain(block.get_index_space(), s.gx, s.gy, 2, 2, 2 * i, 2 * j, kSubColor, LEGION_DISJOINT_COMPLETE_KIND);
      hone_app::name(rt, rt->get_logical_partition(ctx, block, sub), "C_sub");
    }

  const TaskArgument arg(&s, sizeof(s));
  {
    IndexTaskLauncher l(INIT_CUBLAS_ID, Domain(Rect<1>(0, s.gx * s.gy - 1)), TaskArgument(), ArgumentMap());
    rt->execute_index_space(ctx, l);
  }
  // task_1 / task_2 / task_3: each point writes its 2 x 2 group of sub-blocks.
  struct Place {
    TaskID id;
    long long rows, cols;
    LogicalPartition lp;
    int region;
    bool through_block;
  };
  for (const Place &p : {Place{TASK_1_ID, s.gx, s.K, a_sub, 0, false}, Place{TASK_2_ID, s.K, s.gy, b_sub, 1, false},
                         Place{TASK_3_ID, s.gx, s.gy, c_blk, 2, true}}) {
    IndexTaskLauncher l(p.id, Domain(Rect<2>(Point<2>(0, 0), Point<2>(p.rows - 1, p.cols - 1))), arg, ArgumentMap());
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        l.add_region_requirement(RegionRequirement(p.lp, kProjBase + 2 * a + b + (p.through_block ? 4 : 0),
                                                   LEGION_WRITE_DISCARD, LEGION_EXCLUSIVE, reg[p.region]));
        l.region_requirements.back().add_field(FID_A + p.region);
      }
    rt->execute_index_space(ctx, l);
  }
  rt->issue_execution_fence(ctx).wait();
  const double t0 = hone_app::now_s();
  {
    IndexTaskLauncher l(TASK_7_ID, Domain(Rect<2>(Point<2>(0, 0), Point<2>(s.gx - 1, s.gy - 1))), arg, ArgumentMap());
    l.add_region_requirement(RegionRequirement(reg[0], 0, LEGION_READ_ONLY, LEGION_EXCLUSIVE, reg[0]));
    l.region_requirements.back().add_field(FID_A);
    l.add_region_requirement(RegionRequirement(reg[1], 0, LEGION_READ_ONLY, LEGION_EXCLUSIVE, reg[1]));
    l.region_requirements.back().add_field(FID_B);
    l.add_region_requirement(RegionRequirement(c_blk, 0, LEGION_READ_WRITE, LEGION_EXCLUSIVE, reg[2]));
    l.region_requirements.back().add_field(FID_C);
    rt->execute_index_space(ctx, l);
  }
  rt->issue_execution_fence(ctx).wait();
  const double elapsed = hone_app::now_s() - t0;
  std::printf("HONE_TIME %.6f\n", elapsed);
  std::printf("HONE_GFLOPS %.4f\n", 2.0 * std::pow(static_cast<double>(s.n), 3) / elapsed * 1e-9);
  std::printf("summa: n = %lld on %lld x %lld blocks in %.6f s\n", s.n, s.gx, s.gy, elapsed);
  int status = 0;
  if (check) {
    InlineLauncher il(RegionRequirement(reg[2], LEGION_READ_ONLY, LEGION_EXCLUSIVE, reg[2]));
    il.add_field(FID_C);
    PhysicalRegion pr = rt->map_region(ctx, il);
    pr.wait_until_valid();
    Acc<LEGION_READ_ONLY> C(pr, FID_C);
    // Every entry of up to 256 rows spread over the matrix (all rows when n <= 256).
    long long wrong = 0, checked = 0;
    const long long step = std::max(1LL, s.n / 256);
    for (long long r = 0; r < s.n; r += step)
      for (long long c = 0; c < s.n; ++c, ++checked) {
        double want = 0;
        for (long long k = 0; k < s.n; ++k)
          want += a_value(r, k) * b_value(k, c);
        if (C[Point<2>(r, c)] != want)
          ++wrong;
      }
    rt->unmap_region(ctx, pr);
    std::printf("HONE_CHECK %s %lld of %lld entries checked are wrong\n", wrong == 0 ? "ok" : "FAILED", wrong, checked);
    status = wrong == 0 ? 0 : 1;
  }
  std::fflush(stdout);
  for (int m = 0; m < 3; ++m) {
    rt->destroy_logical_region(ctx, reg[m]);
    rt->destroy_field_space(ctx, fs[m]);
    rt->destroy_index_space(ctx, spaces[m]);
  }
  if (status != 0)
    Runtime::set_return_code(status);
}

} // namespace

int main(int argc, char **argv) {
  hone_app::top_level<top_level_task>(TOP_LEVEL_ID);
  hone_app::cpu_task<init_cublas_task>(INIT_CUBLAS_ID, "init_cublas");
  hone_app::cpu_task<place_task<FID_A, a_value>>(TASK_1_ID, "task_1");
  hone_app::cpu_task<place_task<FID_B, b_value>>(TASK_2_ID, "task_2");
  hone_app::cpu_task<place_task<FID_C, zero_value>>(TASK_3_ID, "task_3");
  hone_app::cpu_task<task_4>(TASK_4_ID, "task_4");
  hone_app::cpu_task<task_5>(TASK_5_ID, "task_5", hone_app::Variant::Inner);
  hone_app::cpu_task<task_6>(TASK_6_ID, "task_6", hone_app::Variant::Inner);
  hone_app::cpu_task<task_7>(TASK_7_ID, "task_7", hone_app::Variant::Inner);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      Runtime::preregister_projection_functor(kProjBase + 2 * a + b, new SubBlock(a, b, false));
      Runtime::preregister_projection_functor(kProjBase + 4 + 2 * a + b, new SubBlock(a, b, true));
    }
  return hone_app::start(argc, argv);
}
