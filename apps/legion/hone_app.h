// Helpers shared by hone's real Legion applications (apps/legion): arguments, the runtime's clock,
// the tagged lines hone reads, and the placement log.
//
// Tagged lines an app prints on stdout (docs/LEGION.md, "Real applications"):
//   HONE_TIME <seconds>        elapsed time of the timed part (between execution fences)
//   HONE_GFLOPS <value>        throughput, for apps whose metric is one
//   HONE_CHECK ok|FAILED ...   the correctness check (a failed check also makes the exit status 1)
//   HONE_PLACED <task> <point> <kind> <node> <index> [parent=<node>,<index>]
//                              with -hone:placements: where each task actually ran, from the runtime
//                              (the executing processor), numbered as hone numbers processors: the
//                              index-th processor of that kind on that node, by processor id.
#ifndef HONE_APP_H
#define HONE_APP_H

#include "legion.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hone_app {

/// Call first in main(): stdout line-buffered even into a pipe or file. Realm logs to stdout, and a
/// LEGION ERROR is followed by abort(), which would drop a fully buffered message; this way the
/// runtime's reason for a failure reaches whoever runs the program (hone reads it).
inline void line_buffered_output() { std::setvbuf(stdout, nullptr, _IOLBF, 0); }

/// The value after `-name` among the command-line arguments, or `fallback`.
inline long long arg_int(const char *name, long long fallback) {
  const Legion::InputArgs &args = Legion::Runtime::get_input_args();
  for (int i = 1; i + 1 < args.argc; ++i)
    if (std::strcmp(args.argv[i], name) == 0) {
      char *end = nullptr;
      long long v = std::strtoll(args.argv[i + 1], &end, 10);
      if (end == args.argv[i + 1] || *end != '\0') {
        std::fprintf(stderr, "error: %s expects an integer, got '%s'\n", name, args.argv[i + 1]);
        std::exit(2);
      }
      return v;
    }
  return fallback;
}

/// Whether `-name` is on the command line (alone, or followed by a value other than 0).
inline bool arg_flag(const char *name) {
  const Legion::InputArgs &args = Legion::Runtime::get_input_args();
  for (int i = 1; i < args.argc; ++i)
    if (std::strcmp(args.argv[i], name) == 0)
      return !(i + 1 < args.argc && std::strcmp(args.argv[i + 1], "0") == 0);
  return false;
}

inline double now_s() { return static_cast<double>(Realm::Clock::current_time_in_microseconds()) * 1e-6; }

inline const char *kind_name(Legion::Processor::Kind k) {
  switch (k) {
  case Legion::Processor::LOC_PROC: return "CPU";
  case Legion::Processor::TOC_PROC: return "GPU";
  case Legion::Processor::IO_PROC: return "IO";
  case Legion::Processor::PY_PROC: return "PY";
  case Legion::Processor::OMP_PROC: return "OMP";
  case Legion::Processor::UTIL_PROC: return "UTIL";
  default: return "OTHER";
  }
}

/// A processor's position as hone numbers processors: (node, index of it among that node's
/// processors of its kind, by id).
inline void locate(Legion::Processor p, unsigned *node, long *index) {
  Legion::Machine::ProcessorQuery query(Legion::Machine::get_machine());
  query.only_kind(p.kind());
  std::vector<Legion::Processor> same;
  for (Legion::Processor q : query)
    if (q.address_space() == p.address_space())
      same.push_back(q);
  std::sort(same.begin(), same.end(), [](Legion::Processor a, Legion::Processor b) { return a.id < b.id; });
  *node = static_cast<unsigned>(p.address_space());
  *index = static_cast<long>(std::find(same.begin(), same.end(), p) - same.begin());
}

/// With -hone:placements, prints where `task` is running: the processor the runtime executes it on.
/// A single task also names its parent's processor (what a SingleTaskMap function may use).
inline void log_placement(const Legion::Task *task, Legion::Runtime *runtime, Legion::Context ctx) {
  static const bool enabled = arg_flag("-hone:placements");
  if (!enabled)
    return;
  Legion::Processor p = runtime->get_executing_processor(ctx);
  unsigned node;
  long index;
  locate(p, &node, &index);
  std::string point = "-";
  if (task->is_index_space) {
    point.clear();
    for (int d = 0; d < task->index_point.get_dim(); ++d)
      point += (d ? "," : "") + std::to_string(task->index_point[d]);
  }
  std::string parent;
  const Legion::Task *up = task->get_parent_task();
  if (!task->is_index_space && up && up->current_proc.exists()) {
    unsigned pn;
    long pi;
    locate(up->current_proc, &pn, &pi);
    parent = " parent=" + std::to_string(pn) + "," + std::to_string(pi);
  }
  std::printf("HONE_PLACED %s %s %s %u %ld%s\n", task->get_task_name(), point.c_str(), kind_name(p.kind()), node,
              index, parent.c_str());
  std::fflush(stdout);
}

/// A deterministic hash of (seed, i): every value an app initialises from it can be recomputed by
/// the app's sequential reference.
inline uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A float in [0, 1) from mix().
inline float unit(uint64_t seed, uint64_t i) { return static_cast<float>(mix(seed, i) >> 40) / 16777216.0f; }

/// The bounds of a region requirement's index space (the apps' regions are dense rectangles).
template <int DIM>
Legion::Rect<DIM> rect_of(Legion::Runtime *rt, Legion::Context ctx, const Legion::RegionRequirement &req) {
  const Legion::Rect<DIM> r = rt->get_index_space_domain(ctx, req.region.get_index_space());
  return r;
}

using TaskFn = void (*)(const Legion::Task *, const std::vector<Legion::PhysicalRegion> &, Legion::Context,
                        Legion::Runtime *);
enum class Variant { Leaf, Inner };

inline Legion::TaskVariantRegistrar cpu_registrar(Legion::TaskID id, const char *name, Variant v) {
  Legion::TaskVariantRegistrar r(id, name);
  r.add_constraint(Legion::ProcessorConstraint(Legion::Processor::LOC_PROC));
  if (v == Variant::Inner)
    r.set_inner(true);
  else
    r.set_leaf(true);
  return r;
}

/// Registers a task's CPU variant (a leaf unless said otherwise).
template <TaskFn TASK> void cpu_task(Legion::TaskID id, const char *name, Variant v = Variant::Leaf) {
  Legion::Runtime::preregister_task_variant<TASK>(cpu_registrar(id, name, v), name);
}
/// The same for a task that returns a value.
template <typename R, R (*TASK)(const Legion::Task *, const std::vector<Legion::PhysicalRegion> &, Legion::Context,
                                Legion::Runtime *)>
void cpu_task(Legion::TaskID id, const char *name) {
  Legion::Runtime::preregister_task_variant<R, TASK>(cpu_registrar(id, name, Variant::Leaf), name);
}

/// First in main(): line-buffered output and the top-level task, named "toplevel" as in the models.
template <TaskFn TOP> void top_level(Legion::TaskID id) {
  line_buffered_output();
  Legion::Runtime::set_top_level_task_id(id);
  Legion::TaskVariantRegistrar r(id, "toplevel");
  r.add_constraint(Legion::ProcessorConstraint(Legion::Processor::LOC_PROC));
  Legion::Runtime::preregister_task_variant<TOP>(r, "toplevel");
}

} // namespace hone_app

void register_mappers(); // the hone-compiled mapper (hone compile ... -o mapper.cc)

namespace hone_app {

/// Last in main(): the mapper replaces the default one, and the runtime starts.
inline int start(int argc, char **argv) {
  register_mappers();
  return Legion::Runtime::start(argc, argv);
}

/// Attaches a name the generated mapper matches `Region` statements against.
template <typename Handle> void name(Legion::Runtime *rt, Handle h, const char *n) {
  rt->attach_name(h, n);
}

} // namespace hone_app

#endif // HONE_APP_H
