// stencil: a 2-D radius-2 star stencil on Legion (the Parallel Research Kernels' stencil, as Regent's
// stencil_fast.rg runs it), with the task, region and partition names of hone's model of the app
// (models/apps/stencil.toml). Written for hone; CPU variants.
//
// An n x n grid of doubles (fields input, output) is cut into tx x ty tiles ("private"); each tile
// reads a radius-wide strip of each neighbour ("pxm_in", "pxp_in", "pym_in", "pyp_in"). Launches are
// 1-D over the tiles (tile t is (t % tx, t / tx)). Each step: stencil (output += weighted
// differences of input), increment (input += 1). With input = x + y the stencil adds exactly 2 per
// step at every point at least `radius` from the grid's edge: check counts the points that differ.
//
//   stencil [-n 2000] [-tx 2] [-ty 2] [-steps 10] [-check 0|1] [-hone:placements]   plus Legion's flags
#include "hone_app.h"

#include <cmath>

using namespace Legion;

namespace {

enum TaskIds : TaskID { TOP_LEVEL_ID = 1, INIT_ID, STENCIL_ID, INCREMENT_ID, CHECK_ID, PRINT_TIME_ID };
enum Fields : FieldID { FID_INPUT = 1, FID_OUTPUT };
constexpr int kRadius = 2;

struct Shape {
  long long n, tx, ty, steps;
  Rect<2> tile(long long t) const {
    const long long i = t % tx, j = t / tx;
    return Rect<2>(Point<2>(i * n / tx, j * n / ty), Point<2>((i + 1) * n / tx - 1, (j + 1) * n / ty - 1));
  }
};

template <PrivilegeMode PM>
using Acc = FieldAccessor<PM, double, 2, coord_t, Realm::AffineAccessor<double, 2, coord_t>>;

const Shape &shape_of(const Task *task) { return *static_cast<const Shape *>(task->args); }

void init_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  Acc<LEGION_WRITE_DISCARD> in(regions[0], FID_INPUT), out(regions[0], FID_OUTPUT);
  for (PointInRectIterator<2> it(shape_of(task).tile(task->index_point[0]), false /*x fastest*/); it(); it++) {
    in[*it] = static_cast<double>(it[0] + it[1]);
    out[*it] = 0.0;
  }
}

void stencil_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Shape &s = shape_of(task);
  const Rect<2> tile = s.tile(task->index_point[0]);
  Acc<LEGION_READ_ONLY> in(regions[0], FID_INPUT);
  Acc<LEGION_READ_WRITE> out(regions[1], FID_OUTPUT);
  // A halo region may be empty (a tile on the grid's edge): then no accessor is made for it.
  auto halo = [&](int r) {
    return rt->get_index_space_domain(ctx, task->regions[r].region.get_index_space()).empty()
               ? Acc<LEGION_READ_ONLY>()
               : Acc<LEGION_READ_ONLY>(regions[r], FID_INPUT);
  };
  const Acc<LEGION_READ_ONLY> xm = halo(2), xp = halo(3), ym = halo(4), yp = halo(5);
  auto at = [&](long long x, long long y) {
    const Point<2> p(x, y);
    if (x < tile.lo[0])
      return xm[p];
    if (x > tile.hi[0])
      return xp[p];
    if (y < tile.lo[1])
      return ym[p];
    if (y > tile.hi[1])
      return yp[p];
    return in[p];
  };
  const long long lo = kRadius, hi = s.n - 1 - kRadius;
  for (long long y = std::max<long long>(tile.lo[1], lo); y <= std::min<long long>(tile.hi[1], hi); ++y)
    for (long long x = std::max<long long>(tile.lo[0], lo); x <= std::min<long long>(tile.hi[0], hi); ++x) {
      double sum = 0;
      for (int k = 1; k <= kRadius; ++k) {
        const double w = 1.0 / (2.0 * k * kRadius);
        sum += w * (at(x + k, y) - at(x - k, y)) + w * (at(x, y + k) - at(x, y - k));
      }
      out[Point<2>(x, y)] += sum;
    }
}

void increment_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  Acc<LEGION_READ_WRITE> in(regions[0], FID_INPUT);
  for (PointInRectIterator<2> it(shape_of(task).tile(task->index_point[0]), false); it(); it++)
    in[*it] += 1.0;
}

/// The number of points of the tile whose output is wrong.
int64_t check_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Shape &s = shape_of(task);
  Acc<LEGION_READ_ONLY> out(regions[0], FID_OUTPUT);
  const double want = 2.0 * static_cast<double>(s.steps);
  int64_t wrong = 0;
  for (PointInRectIterator<2> it(s.tile(task->index_point[0]), false); it(); it++) {
    const bool interior = it[0] >= kRadius && it[0] < s.n - kRadius && it[1] >= kRadius && it[1] < s.n - kRadius;
    const double expect = interior ? want : 0.0;
    if (!(std::fabs(out[*it] - expect) <= 1e-9 * (1.0 + want)))
      ++wrong;
  }
  return wrong;
}

void print_time_task(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const double *t = static_cast<const double *>(task->args);
  std::printf("HONE_TIME %.6f\n", t[0]);
  std::printf("stencil: %.0f steps on a %.0f x %.0f grid in %.6f s\n", t[1], t[2], t[2], t[0]);
  std::fflush(stdout);
}

void top_level_task(const Task *, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  Shape s{hone_app::arg_int("-n", 2000), hone_app::arg_int("-tx", 2), hone_app::arg_int("-ty", 2),
          hone_app::arg_int("-steps", 10)};
  const bool check = hone_app::arg_int("-check", 1) != 0;
  if (s.tx < 1 || s.ty < 1 || s.n < s.tx * kRadius || s.n < s.ty * kRadius || s.steps < 0) {
    std::fprintf(stderr, "error: need tx, ty >= 1, n >= %d * max(tx, ty) and steps >= 0\n", kRadius);
    std::exit(2);
  }
  const long long tiles = s.tx * s.ty;
  FieldSpace fs = rt->create_field_space(ctx);
  {
    FieldAllocator a = rt->create_field_allocator(ctx, fs);
    a.allocate_field(sizeof(double), FID_INPUT);
    a.allocate_field(sizeof(double), FID_OUTPUT);
  }
  IndexSpace is = rt->create_index_space(ctx, Rect<2>(Point<2>(0, 0), Point<2>(s.n - 1, s.n - 1)));
  LogicalRegion points = rt->create_logical_region(ctx, is, fs);
  hone_app::name(rt, points, "points");
  IndexSpace colors = rt->create_index_space(ctx, Rect<1>(0, tiles - 1));

  // The tiles, and each tile's strip of its neighbour on each side (empty at the grid's edge).
  const Rect<2> none(Point<2>(0, 0), Point<2>(-1, -1));
  std::map<DomainPoint, Domain> tiles_of, xm, xp, ym, yp;
  for (long long t = 0; t < tiles; ++t) {
    const Rect<2> r = s.tile(t);
    const DomainPoint c{Point<1>(t)};
    tiles_of[c] = Domain(r);
    xm[c] = Domain(r.lo[0] == 0 ? none : Rect<2>(Point<2>(r.lo[0] - kRadius, r.lo[1]), Point<2>(r.lo[0] - 1, r.hi[1])));
    xp[c] = Domain(r.hi[0] == s.n - 1 ? none
                                      : Rect<2>(Point<2>(r.hi[0] + 1, r.lo[1]), Point<2>(r.hi[0] + kRadius, r.hi[1])));
    ym[c] = Domain(r.lo[1] == 0 ? none : Rect<2>(Point<2>(r.lo[0], r.lo[1] - kRadius), Point<2>(r.hi[0], r.lo[1] - 1)));
    yp[c] = Domain(r.hi[1] == s.n - 1 ? none
                                      : Rect<2>(Point<2>(r.lo[0], r.hi[1] + 1), Point<2>(r.hi[0], r.hi[1] + kRadius)));
  }
  auto part = [&](const std::map<DomainPoint, Domain> &d, const char *n, PartitionKind kind) {
    LogicalPartition lp =
        rt->get_logical_partition(ctx, points, rt->create_partition_by_domain(ctx, is, d, colors, true, kind));
    hone_app::name(rt, lp, n);
    return lp;
  };
  LogicalPartition priv = part(tiles_of, "private", LEGION_DISJOINT_COMPLETE_KIND);
  LogicalPartition pxm = part(xm, "pxm_in", LEGION_DISJOINT_KIND), pxp = part(xp, "pxp_in", LEGION_DISJOINT_KIND),
                   pym = part(ym, "pym_in", LEGION_DISJOINT_KIND), pyp = part(yp, "pyp_in", LEGION_DISJOINT_KIND);

  const Domain launch(Rect<1>(0, tiles - 1));
  const TaskArgument arg(&s, sizeof(s));
  auto req = [&](LogicalPartition lp, PrivilegeMode pm, FieldID f) {
    RegionRequirement r(lp, 0, pm, LEGION_EXCLUSIVE, points);
    r.add_field(f);
    return r;
  };
  {
    IndexTaskLauncher l(INIT_ID, launch, arg, ArgumentMap());
    RegionRequirement r(priv, 0, LEGION_WRITE_DISCARD, LEGION_EXCLUSIVE, points);
    r.add_field(FID_INPUT);
    r.add_field(FID_OUTPUT);
    l.add_region_requirement(r);
    rt->execute_index_space(ctx, l);
  }
  rt->issue_execution_fence(ctx).wait();
  const double t0 = hone_app::now_s();
  for (long long step = 0; step < s.steps; ++step) {
    IndexTaskLauncher st(STENCIL_ID, launch, arg, ArgumentMap());
    st.add_region_requirement(req(priv, LEGION_READ_ONLY, FID_INPUT));
    st.add_region_requirement(req(priv, LEGION_READ_WRITE, FID_OUTPUT));
    for (LogicalPartition h : {pxm, pxp, pym, pyp})
      st.add_region_requirement(req(h, LEGION_READ_ONLY, FID_INPUT));
    rt->execute_index_space(ctx, st);
    IndexTaskLauncher inc(INCREMENT_ID, launch, arg, ArgumentMap());
    inc.add_region_requirement(req(priv, LEGION_READ_WRITE, FID_INPUT));
    rt->execute_index_space(ctx, inc);
  }
  rt->issue_execution_fence(ctx).wait();
  const double times[3] = {hone_app::now_s() - t0, static_cast<double>(s.steps), static_cast<double>(s.n)};
  int status = 0;
  if (check) {
    IndexTaskLauncher l(CHECK_ID, launch, arg, ArgumentMap());
    l.add_region_requirement(req(priv, LEGION_READ_ONLY, FID_OUTPUT));
    const int64_t wrong = rt->execute_index_space(ctx, l, LEGION_REDOP_SUM_INT64).get_result<int64_t>();
    std::printf("HONE_CHECK %s %lld of %lld points wrong\n", wrong == 0 ? "ok" : "FAILED",
                static_cast<long long>(wrong), s.n * s.n);
    status = wrong == 0 ? 0 : 1;
  }
  rt->execute_task(ctx, TaskLauncher(PRINT_TIME_ID, TaskArgument(times, sizeof(times)))).get_void_result();
  rt->destroy_logical_region(ctx, points);
  rt->destroy_field_space(ctx, fs);
  rt->destroy_index_space(ctx, is);
  rt->destroy_index_space(ctx, colors);
  if (status != 0)
    Runtime::set_return_code(status);
}

} // namespace

int main(int argc, char **argv) {
  hone_app::top_level<top_level_task>(TOP_LEVEL_ID);
  hone_app::cpu_task<init_task>(INIT_ID, "init");
  hone_app::cpu_task<stencil_task>(STENCIL_ID, "stencil");
  hone_app::cpu_task<increment_task>(INCREMENT_ID, "increment");
  hone_app::cpu_task<int64_t, check_task>(CHECK_ID, "check");
  hone_app::cpu_task<print_time_task>(PRINT_TIME_ID, "print_time");
  return hone_app::start(argc, argv);
}
