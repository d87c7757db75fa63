// circuit: an electrical circuit simulation on Legion, with the task, region and partition names of
// hone's model of the app (models/apps/circuit.toml). Written for hone (after the structure of
// Regent's circuit_sparse.rg as described in hone's benchmark reference); CPU variants.
//
// Each piece owns `-w` wires and private nodes, and a few shared nodes its neighbours' wires reach
// (rp_ghost: the shared nodes of the pieces on either side). Every loop: calculate_new_currents
// (wires read node voltages), distribute_charge (wires move charge into their end nodes; shared and
// ghost nodes by reduction), update_voltages (nodes). The result is checked against a sequential
// reference of the same computation.
//
//   circuit [-p pieces=4] [-w wires per piece=20000] [-l loops=10] [-seed S=1] [-check 0|1]
//           [-hone:placements]   plus Legion's flags (-ll:cpu N -ll:util 1 ...)
#include "hone_app.h"

#include <cmath>

using namespace Legion;

namespace {

enum TaskIds : TaskID { TOP_LEVEL_ID = 1, INIT_PIECE_ID, INIT_POINTERS_ID, CNC_ID, DC_ID, UV_ID, PRINT_SUMMARY_ID };
enum NodeFields : FieldID { FID_NODE_CAP = 1, FID_LEAKAGE, FID_CHARGE, FID_NODE_VOLTAGE };
enum WireFields : FieldID {
  FID_IN_PTR = 11,
  FID_OUT_PTR,
  FID_INDUCTANCE,
  FID_RESISTANCE,
  FID_WIRE_CAP,
  FID_CURRENT,
  FID_VOLTAGE
};

constexpr int kSegments = 10;
constexpr int kSubsteps = 4;
constexpr float kDt = 0.01f;
struct Currents {
  float v[kSegments];
};
struct Voltages {
  float v[kSegments - 1];
};

/// The circuit's shape; every task gets it by value.
struct Shape {
  long long pieces, wires, priv, shared;
  uint64_t seed;
  long long private_lo(long long p) const { return p * priv; }
  long long shared_lo(long long p) const { return pieces * priv + p * shared; }
  long long nodes() const { return pieces * (priv + shared); }
  // Wire `w` of piece `p`: its in node is private; 5% of wires end on a shared node of the piece or
  // of a neighbour, the others on a private node.
  void ends(long long p, long long w, long long *in, long long *out) const {
    uint64_t g = static_cast<uint64_t>(p * wires + w);
    *in = private_lo(p) + static_cast<long long>(hone_app::mix(seed, 3 * g) % static_cast<uint64_t>(priv));
    if (hone_app::unit(seed, 3 * g + 1) < 0.05f) {
      uint64_t r = hone_app::mix(seed, 3 * g + 2);
      long long q = p;
      if (pieces > 1 && r % 3 == 1)
        q = (p + pieces - 1) % pieces;
      else if (pieces > 1 && r % 3 == 2)
        q = (p + 1) % pieces;
      *out = shared_lo(q) + static_cast<long long>((r >> 8) % static_cast<uint64_t>(shared));
    } else {
      *out = private_lo(p) + static_cast<long long>(hone_app::mix(seed, 3 * g + 2) % static_cast<uint64_t>(priv));
    }
  }
  float node_cap(long long n) const { return 1.0f + hone_app::unit(seed ^ 0x11, static_cast<uint64_t>(n)); }
  float leakage(long long n) const { return 0.001f * hone_app::unit(seed ^ 0x22, static_cast<uint64_t>(n)); }
  float voltage0(long long n) const { return 2.0f * hone_app::unit(seed ^ 0x33, static_cast<uint64_t>(n)) - 1.0f; }
  float inductance(long long g) const { return 1.0f + hone_app::unit(seed ^ 0x44, static_cast<uint64_t>(g)); }
  float resistance(long long g) const { return 0.1f + hone_app::unit(seed ^ 0x55, static_cast<uint64_t>(g)); }
  float wire_cap(long long g) const { return 1.0f + hone_app::unit(seed ^ 0x66, static_cast<uint64_t>(g)); }
};

// The physics, shared by the tasks and the sequential reference.
inline void step_wire(float vin, float vout, float L, float R, float C, Currents &I, Voltages &V) {
  for (int s = 0; s < kSubsteps; ++s) {
    for (int k = 0; k < kSegments; ++k) {
      float vl = k == 0 ? vin : V.v[k - 1];
      float vr = k == kSegments - 1 ? vout : V.v[k];
      I.v[k] += kDt * (vl - vr - R * I.v[k]) / L;
    }
    for (int k = 0; k < kSegments - 1; ++k)
      V.v[k] += kDt * (I.v[k] - I.v[k + 1]) / C;
  }
}
inline float update_node(float v, float charge, float cap, float leak) { return (v + charge / cap) * (1.0f - leak); }

template <PrivilegeMode PM, typename T>
using Acc = FieldAccessor<PM, T, 1, coord_t, Realm::AffineAccessor<T, 1, coord_t>>;
template <PrivilegeMode PM, typename T>
using MultiAcc = FieldAccessor<PM, T, 1, coord_t, Realm::MultiAffineAccessor<T, 1, coord_t>>;
using SumAcc = ReductionAccessor<SumReduction<float>, false, 1, coord_t, Realm::MultiAffineAccessor<float, 1, coord_t>>;

const Shape &shape_of(const Task *task) { return *static_cast<const Shape *>(task->args); }

void init_piece_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Shape &s = shape_of(task);
  for (int r = 0; r < 2; ++r) {
    Acc<LEGION_WRITE_DISCARD, float> cap(regions[r], FID_NODE_CAP), leak(regions[r], FID_LEAKAGE),
        charge(regions[r], FID_CHARGE), volt(regions[r], FID_NODE_VOLTAGE);
    for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[r])); it(); it++) {
      cap[*it] = s.node_cap(it[0]);
      leak[*it] = s.leakage(it[0]);
      charge[*it] = 0.0f;
      volt[*it] = s.voltage0(it[0]);
    }
  }
  Acc<LEGION_WRITE_DISCARD, float> L(regions[2], FID_INDUCTANCE), R(regions[2], FID_RESISTANCE),
      C(regions[2], FID_WIRE_CAP);
  Acc<LEGION_WRITE_DISCARD, Currents> I(regions[2], FID_CURRENT);
  Acc<LEGION_WRITE_DISCARD, Voltages> V(regions[2], FID_VOLTAGE);
  for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[2])); it(); it++) {
    L[*it] = s.inductance(it[0]);
    R[*it] = s.resistance(it[0]);
    C[*it] = s.wire_cap(it[0]);
    I[*it] = Currents{};
    V[*it] = Voltages{};
  }
}

void init_pointers_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Shape &s = shape_of(task);
  const long long p = task->index_point[0];
  Acc<LEGION_WRITE_DISCARD, long long> in(regions[0], FID_IN_PTR), out(regions[0], FID_OUT_PTR);
  for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[0])); it(); it++) {
    long long a, b;
    s.ends(p, it[0] - p * s.wires, &a, &b);
    in[*it] = a;
    out[*it] = b;
  }
}

/// Reads a node's value from whichever of the piece's node regions holds it.
struct NodeView {
  Rect<1> priv, shared;
  MultiAcc<LEGION_READ_ONLY, float> p, s, g;
  float operator()(long long n) const {
    if (priv.contains(Point<1>(n)))
      return p[n];
    if (shared.contains(Point<1>(n)))
      return s[n];
    return g[n];
  }
};

void cnc_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  NodeView v{hone_app::rect_of<1>(rt, ctx, task->regions[0]), hone_app::rect_of<1>(rt, ctx, task->regions[1]),
             MultiAcc<LEGION_READ_ONLY, float>(regions[0], FID_NODE_VOLTAGE),
             MultiAcc<LEGION_READ_ONLY, float>(regions[1], FID_NODE_VOLTAGE),
             MultiAcc<LEGION_READ_ONLY, float>(regions[2], FID_NODE_VOLTAGE)};
  Acc<LEGION_READ_ONLY, long long> in(regions[3], FID_IN_PTR), out(regions[3], FID_OUT_PTR);
  Acc<LEGION_READ_ONLY, float> L(regions[3], FID_INDUCTANCE), R(regions[3], FID_RESISTANCE),
      C(regions[3], FID_WIRE_CAP);
  Acc<LEGION_READ_WRITE, Currents> I(regions[4], FID_CURRENT);
  Acc<LEGION_READ_WRITE, Voltages> V(regions[4], FID_VOLTAGE);
  for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[3])); it(); it++) {
    Currents i = I[*it];
    Voltages u = V[*it];
    step_wire(v(in[*it]), v(out[*it]), L[*it], R[*it], C[*it], i, u);
    I[*it] = i;
    V[*it] = u;
  }
}

void dc_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const Rect<1> priv = hone_app::rect_of<1>(rt, ctx, task->regions[0]),
                shared = hone_app::rect_of<1>(rt, ctx, task->regions[1]);
  Acc<LEGION_READ_WRITE, float> own(regions[0], FID_CHARGE);
  SumAcc to_shared(regions[1], FID_CHARGE, LEGION_REDOP_SUM_FLOAT32);
  SumAcc to_ghost(regions[2], FID_CHARGE, LEGION_REDOP_SUM_FLOAT32);
  Acc<LEGION_READ_ONLY, long long> in(regions[3], FID_IN_PTR), out(regions[3], FID_OUT_PTR);
  Acc<LEGION_READ_ONLY, Currents> I(regions[3], FID_CURRENT);
  auto add = [&](long long n, float dq) {
    if (priv.contains(Point<1>(n)))
      own[n] = own[n] + dq;
    else if (shared.contains(Point<1>(n)))
      to_shared[n] <<= dq;
    else
      to_ghost[n] <<= dq;
  };
  for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[3])); it(); it++) {
    const Currents i = I[*it];
    add(in[*it], -kDt * i.v[0]);
    add(out[*it], kDt * i.v[kSegments - 1]);
  }
}

void uv_task(const Task *task, const std::vector<PhysicalRegion> &regions, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  for (int r = 0; r < 2; ++r) {
    Acc<LEGION_READ_WRITE, float> volt(regions[r], FID_NODE_VOLTAGE), charge(regions[r], FID_CHARGE),
        cap(regions[r], FID_NODE_CAP), leak(regions[r], FID_LEAKAGE);
    for (PointInRectIterator<1> it(hone_app::rect_of<1>(rt, ctx, task->regions[r])); it(); it++) {
      volt[*it] = update_node(volt[*it], charge[*it], cap[*it], leak[*it]);
      charge[*it] = 0.0f;
    }
  }
}

void print_summary_task(const Task *task, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  hone_app::log_placement(task, rt, ctx);
  const double *t = static_cast<const double *>(task->args);
  std::printf("HONE_TIME %.6f\n", t[0]);
  std::printf("circuit: %.0f loops over %.0f wires in %.6f s (%.3f us per wire and loop)\n", t[1], t[2], t[0],
              t[0] * 1e6 / (t[1] * t[2]));
  std::fflush(stdout);
}

/// The same computation, sequentially: the final node voltages.
std::vector<float> reference(const Shape &s, long long loops) {
  const long long nodes = s.nodes(), all_wires = s.pieces * s.wires;
  std::vector<float> volt(nodes), charge(nodes, 0.0f), cap(nodes), leak(nodes);
  for (long long n = 0; n < nodes; ++n) {
    volt[n] = s.voltage0(n);
    cap[n] = s.node_cap(n);
    leak[n] = s.leakage(n);
  }
  std::vector<long long> in(all_wires), out(all_wires);
  std::vector<Currents> I(all_wires, Currents{});
  std::vector<Voltages> V(all_wires, Voltages{});
  for (long long g = 0; g < all_wires; ++g)
    s.ends(g / s.wires, g % s.wires, &in[g], &out[g]);
  for (long long l = 0; l < loops; ++l) {
    for (long long g = 0; g < all_wires; ++g)
      step_wire(volt[in[g]], volt[out[g]], s.inductance(g), s.resistance(g), s.wire_cap(g), I[g], V[g]);
    for (long long g = 0; g < all_wires; ++g) {
      charge[in[g]] -= kDt * I[g].v[0];
      charge[out[g]] += kDt * I[g].v[kSegments - 1];
    }
    for (long long n = 0; n < nodes; ++n) {
      volt[n] = update_node(volt[n], charge[n], cap[n], leak[n]);
      charge[n] = 0.0f;
    }
  }
  return volt;
}

IndexPartition by_ranges(Runtime *rt, Context ctx, IndexSpace is, IndexSpace colors, long long pieces, long long lo0,
                         long long per) {
  std::map<DomainPoint, Domain> ranges;
  for (long long p = 0; p < pieces; ++p)
    ranges[DomainPoint(Point<1>(p))] = Domain(Rect<1>(lo0 + p * per, lo0 + (p + 1) * per - 1));
  return rt->create_partition_by_domain(ctx, is, ranges, colors, true, LEGION_DISJOINT_COMPLETE_KIND);
}

void top_level_task(const Task *, const std::vector<PhysicalRegion> &, Context ctx, Runtime *rt) {
  Shape s{};
  s.pieces = hone_app::arg_int("-p", 4);
  s.wires = hone_app::arg_int("-w", 20000);
  const long long loops = hone_app::arg_int("-l", 10);
  s.seed = static_cast<uint64_t>(hone_app::arg_int("-seed", 1));
  const bool check = hone_app::arg_int("-check", 1) != 0;
  s.priv = std::max(1LL, s.wires * 49500 / 200000); // the model's proportions: ~49,500 private and
  s.shared = std::max(1LL, s.wires * 500 / 200000); // ~500 shared nodes per 200,000 wires
  if (s.pieces < 1 || s.wires < 1 || loops < 0) {
    std::fprintf(stderr, "error: -p and -w must be positive and -l not negative\n");
    std::exit(2);
  }

  FieldSpace nfs = rt->create_field_space(ctx);
  {
    FieldAllocator a = rt->create_field_allocator(ctx, nfs);
    a.allocate_field(sizeof(float), FID_NODE_CAP);
    a.allocate_field(sizeof(float), FID_LEAKAGE);
    a.allocate_field(sizeof(float), FID_CHARGE);
    a.allocate_field(sizeof(float), FID_NODE_VOLTAGE);
  }
  FieldSpace wfs = rt->create_field_space(ctx);
  {
    FieldAllocator a = rt->create_field_allocator(ctx, wfs);
    a.allocate_field(sizeof(long long), FID_IN_PTR);
    a.allocate_field(sizeof(long long), FID_OUT_PTR);
    a.allocate_field(sizeof(float), FID_INDUCTANCE);
    a.allocate_field(sizeof(float), FID_RESISTANCE);
    a.allocate_field(sizeof(float), FID_WIRE_CAP);
    a.allocate_field(sizeof(Currents), FID_CURRENT);
    a.allocate_field(sizeof(Voltages), FID_VOLTAGE);
  }
  IndexSpace nis = rt->create_index_space(ctx, Rect<1>(0, s.nodes() - 1));
  IndexSpace wis = rt->create_index_space(ctx, Rect<1>(0, s.pieces * s.wires - 1));
  LogicalRegion all_nodes = rt->create_logical_region(ctx, nis, nfs);
  LogicalRegion all_wires = rt->create_logical_region(ctx, wis, wfs);
  hone_app::name(rt, all_nodes, "all_nodes");
  hone_app::name(rt, all_wires, "all_wires");

  IndexSpace colors = rt->create_index_space(ctx, Rect<1>(0, s.pieces - 1));
  std::map<DomainPoint, Domain> priv_ranges, shared_ranges;
  for (long long p = 0; p < s.pieces; ++p) {
    priv_ranges[DomainPoint(Point<1>(p))] = Domain(Rect<1>(s.private_lo(p), s.private_lo(p) + s.priv - 1));
    shared_ranges[DomainPoint(Point<1>(p))] = Domain(Rect<1>(s.shared_lo(p), s.shared_lo(p) + s.shared - 1));
  }
  IndexPartition priv_ip = rt->create_partition_by_domain(ctx, nis, priv_ranges, colors, true, LEGION_DISJOINT_KIND);
  IndexPartition shared_ip =
      rt->create_partition_by_domain(ctx, nis, shared_ranges, colors, true, LEGION_DISJOINT_KIND);
  // A piece's ghost nodes: the shared nodes of the pieces on either side (aliased).
  IndexPartition ghost_ip = rt->create_pending_partition(ctx, nis, colors, LEGION_ALIASED_KIND);
  for (long long p = 0; p < s.pieces; ++p) {
    std::vector<IndexSpace> sides;
    if (s.pieces > 1) {
      sides.push_back(rt->get_index_subspace(ctx, shared_ip, DomainPoint(Point<1>((p + s.pieces - 1) % s.pieces))));
      if (s.pieces > 2)
        sides.push_back(rt->get_index_subspace(ctx, shared_ip, DomainPoint(Point<1>((p + 1) % s.pieces))));
    }
    rt->create_index_space_union(ctx, ghost_ip, DomainPoint(Point<1>(p)), sides);
  }
  IndexPartition wires_ip = by_ranges(rt, ctx, wis, colors, s.pieces, 0, s.wires);
  LogicalPartition rp_private = rt->get_logical_partition(ctx, all_nodes, priv_ip);
  LogicalPartition rp_shared = rt->get_logical_partition(ctx, all_nodes, shared_ip);
  LogicalPartition rp_ghost = rt->get_logical_partition(ctx, all_nodes, ghost_ip);
  LogicalPartition rp_wires = rt->get_logical_partition(ctx, all_wires, wires_ip);
  hone_app::name(rt, rp_private, "rp_private");
  hone_app::name(rt, rp_shared, "rp_shared");
  hone_app::name(rt, rp_ghost, "rp_ghost");
  hone_app::name(rt, rp_wires, "rp_wires");

  const Domain launch(Rect<1>(0, s.pieces - 1));
  const TaskArgument shape_arg(&s, sizeof(s));
  auto nodes_req = [&](LogicalPartition lp, PrivilegeMode pm, std::initializer_list<FieldID> fields) {
    RegionRequirement r(lp, 0, pm, LEGION_EXCLUSIVE, all_nodes);
    for (FieldID f : fields)
      r.add_field(f);
    return r;
  };
  auto reduce_req = [&](LogicalPartition lp) {
    RegionRequirement r(lp, 0, LEGION_REDOP_SUM_FLOAT32, LEGION_EXCLUSIVE, all_nodes);
    r.add_field(FID_CHARGE);
    return r;
  };
  auto wires_req = [&](PrivilegeMode pm, std::initializer_list<FieldID> fields) {
    RegionRequirement r(rp_wires, 0, pm, LEGION_EXCLUSIVE, all_wires);
    for (FieldID f : fields)
      r.add_field(f);
    return r;
  };
  const std::initializer_list<FieldID> node_fields = {FID_NODE_CAP, FID_LEAKAGE, FID_CHARGE, FID_NODE_VOLTAGE};

  {
    IndexTaskLauncher l(INIT_PIECE_ID, launch, shape_arg, ArgumentMap());
    l.add_region_requirement(nodes_req(rp_private, LEGION_WRITE_DISCARD, node_fields));
    l.add_region_requirement(nodes_req(rp_shared, LEGION_WRITE_DISCARD, node_fields));
    l.add_region_requirement(
        wires_req(LEGION_WRITE_DISCARD, {FID_INDUCTANCE, FID_RESISTANCE, FID_WIRE_CAP, FID_CURRENT, FID_VOLTAGE}));
    rt->execute_index_space(ctx, l);
  }
  {
    IndexTaskLauncher l(INIT_POINTERS_ID, launch, shape_arg, ArgumentMap());
    l.add_region_requirement(wires_req(LEGION_WRITE_DISCARD, {FID_IN_PTR, FID_OUT_PTR}));
    rt->execute_index_space(ctx, l);
  }
  rt->issue_execution_fence(ctx).wait();
  const double t0 = hone_app::now_s();
  for (long long loop = 0; loop < loops; ++loop) {
    {
      IndexTaskLauncher l(CNC_ID, launch, shape_arg, ArgumentMap());
      l.add_region_requirement(nodes_req(rp_private, LEGION_READ_ONLY, {FID_NODE_VOLTAGE}));
      l.add_region_requirement(nodes_req(rp_shared, LEGION_READ_ONLY, {FID_NODE_VOLTAGE}));
      l.add_region_requirement(nodes_req(rp_ghost, LEGION_READ_ONLY, {FID_NODE_VOLTAGE}));
      l.add_region_requirement(
          wires_req(LEGION_READ_ONLY, {FID_IN_PTR, FID_OUT_PTR, FID_INDUCTANCE, FID_RESISTANCE, FID_WIRE_CAP}));
      l.add_region_requirement(wires_req(LEGION_READ_WRITE, {FID_CURRENT, FID_VOLTAGE}));
      rt->execute_index_space(ctx, l);
    }
    {
      IndexTaskLauncher l(DC_ID, launch, shape_arg, ArgumentMap());
      l.add_region_requirement(nodes_req(rp_private, LEGION_READ_WRITE, {FID_CHARGE}));
      l.add_region_requirement(reduce_req(rp_shared));
      l.add_region_requirement(reduce_req(rp_ghost));
      l.add_region_requirement(wires_req(LEGION_READ_ONLY, {FID_IN_PTR, FID_OUT_PTR, FID_CURRENT}));
      rt->execute_index_space(ctx, l);
    }
    {
      IndexTaskLauncher l(UV_ID, launch, shape_arg, ArgumentMap());
      l.add_region_requirement(nodes_req(rp_private, LEGION_READ_WRITE, node_fields));
      l.add_region_requirement(nodes_req(rp_shared, LEGION_READ_WRITE, node_fields));
      rt->execute_index_space(ctx, l);
    }
  }
  rt->issue_execution_fence(ctx).wait();
  const double times[3] = {hone_app::now_s() - t0, static_cast<double>(loops), static_cast<double>(s.pieces * s.wires)};
  rt->execute_task(ctx, TaskLauncher(PRINT_SUMMARY_ID, TaskArgument(times, sizeof(times)))).get_void_result();

  int status = 0;
  if (check) {
    InlineLauncher il(RegionRequirement(all_nodes, LEGION_READ_ONLY, LEGION_EXCLUSIVE, all_nodes));
    il.add_field(FID_NODE_VOLTAGE);
    PhysicalRegion pr = rt->map_region(ctx, il);
    pr.wait_until_valid();
    MultiAcc<LEGION_READ_ONLY, float> volt(pr, FID_NODE_VOLTAGE);
    const std::vector<float> want = reference(s, loops);
    double worst = 0, scale = 1;
    for (float w : want)
      scale = std::max(scale, static_cast<double>(std::fabs(w)));
    for (long long n = 0; n < s.nodes(); ++n)
      worst = std::max(worst, std::fabs(static_cast<double>(volt[n]) - want[n]) / scale);
    rt->unmap_region(ctx, pr);
    const bool ok = std::isfinite(worst) && worst <= 1e-4;
    std::printf("HONE_CHECK %s max_rel_error=%.3g over %lld nodes (tolerance 1e-4)\n", ok ? "ok" : "FAILED", worst,
                s.nodes());
    status = ok ? 0 : 1;
  }
  std::fflush(stdout);
  rt->destroy_logical_region(ctx, all_nodes);
  rt->destroy_logical_region(ctx, all_wires);
  rt->destroy_field_space(ctx, nfs);
  rt->destroy_field_space(ctx, wfs);
  rt->destroy_index_space(ctx, nis);
  rt->destroy_index_space(ctx, wis);
  rt->destroy_index_space(ctx, colors);
  if (status != 0)
    Runtime::set_return_code(status);
}

} // namespace

int main(int argc, char **argv) {
  hone_app::top_level<top_level_task>(TOP_LEVEL_ID);
  hone_app::cpu_task<init_piece_task>(INIT_PIECE_ID, "init_piece");
  hone_app::cpu_task<init_pointers_task>(INIT_POINTERS_ID, "init_pointers");
  hone_app::cpu_task<cnc_task>(CNC_ID, "calculate_new_currents");
  hone_app::cpu_task<dc_task>(DC_ID, "distribute_charge");
  hone_app::cpu_task<uv_task>(UV_ID, "update_voltages");
  hone_app::cpu_task<print_summary_task>(PRINT_SUMMARY_ID, "print_summary");
  return hone_app::start(argc, argv);
}
