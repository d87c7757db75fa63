// Application models: regions, partitions, tasks and launch structure of a
// task-based program, read from models/apps/*.toml (format: docs/MODEL.md),
// and their instantiation for a machine and a problem size into the list of
// point tasks the simulator executes.
#pragma once

#include "support/Expr.h"
#include "model/Machine.h"
#include "support/Expected.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::model {

using support::Expr; // model files' expressions (support/Expr.h)

enum class Privilege { Read, Write, ReadWrite, Reduce };
std::string_view toString(Privilege p);

struct Field {
  std::string name;
  double bytes = 0; // per element
};

struct Region {
  std::string name;
  int dims = 1;
  std::vector<Field> fields;
  std::optional<Expr> elements; // for regions without disjoint partitions
  int line = 0;
};

struct Partition {
  std::string name;
  std::string region;
  std::vector<Expr> pieces;  // extents of the piece grid
  std::optional<Expr> elements; // disjoint: elements per piece
  // aliased (ghost/halo views): piece p covers pieces p + offset of `covers`
  // (wrapping around the grid), `fraction` of each.
  std::string covers;
  std::vector<std::vector<int64_t>> neighbors;
  std::optional<Expr> fraction;
  bool wrap = true; // offsets past the grid's edge wrap around (false: no neighbour there)
  int line = 0;
  bool aliased() const { return !covers.empty(); }
};

struct Arg {
  std::string region; // a region or a partition passed to the task
  std::vector<Expr> piece;                          // which piece, from the launch variables
  std::vector<std::pair<std::string, Expr>> over;   // union over these ranges (name = count)
  Privilege privilege = Privilege::Read;
  std::vector<std::string> fields;
  std::optional<Expr> traffic; // bytes the kernel moves through this argument per point
  int line = 0;
};

/// A layout the variant needs; another layout fails with `message`.
struct LayoutRequirement {
  std::optional<int> arg;          // nullopt: every argument of 2 or more dims
  std::optional<std::string> order; // "C_order" or "F_order"
  bool soa = false;                 // fields may not be interleaved (AOS with several fields fails)
  std::vector<ProcKind> variants;   // empty: all
  std::string message;
  int line = 0;
};

struct Launch {
  std::string task;
  std::vector<Expr> domain;        // empty: a single task
  std::vector<std::string> point;  // names of the point's coordinates
  std::optional<std::pair<std::string, Expr>> repeat; // launched `count` times, variable = 0..count-1
  int line = 0;
};

struct Task {
  std::string name;
  std::vector<ProcKind> variants;
  std::vector<Arg> args;
  Expr flops = Expr::constant(0); // per point
  std::map<ProcKind, double> efficiency; // fraction of peak reached per kind (default 1)
  std::vector<LayoutRequirement> layoutNeeds;
  std::vector<Launch> launches; // children: an inner task
  int line = 0;
  bool inner() const { return !launches.empty(); }
  bool hasVariant(ProcKind k) const;
};

struct AppModel {
  std::string name;
  std::string description;
  std::string path;
  std::string topTask;
  Expr iterations = Expr::constant(1);
  bool gflopsMetric = false;
  std::optional<Expr> flops; // total useful flops of the timed part (gflops metric)
  std::string sizeName;
  double sizeDefault = 0;
  std::string sizeDoc;
  std::vector<std::pair<std::string, Expr>> params;
  std::vector<Region> regions;
  std::vector<Partition> partitions;
  std::vector<Task> tasks;
  std::vector<Launch> setup, body, teardown; // teardown: after the measured part

  const Task *task(const std::string &name) const;
  int taskIndex(const std::string &name) const;
  const Region *region(const std::string &name) const;
  const Partition *partition(const std::string &name) const;
  /// Names a policy may use for a region argument: region and partition names.
  std::vector<std::string> regionNames() const;
  std::vector<std::string> taskNames() const;
};

support::Expected<AppModel> parseApp(const std::string &path, const std::string &text);
support::Expected<AppModel> loadApp(const std::string &path);

// ---- instantiation ----------------------------------------------------------

/// One field of one block of a region: the unit of data the simulator tracks.
struct Datum {
  int region = 0;
  int field = 0;
  double bytes = 0;
  std::string label; // "rp_shared[2].charge"
};

/// A region argument of a point task.
struct Access {
  int arg = 0;
  Privilege privilege = Privilege::Read;
  std::vector<std::pair<uint32_t, double>> data; // datum, fraction of it the argument covers
  double instanceBytes = 0; // size of an instance holding the argument
  double trafficBytes = 0;  // bytes the kernel moves through it
  uint32_t view = 0;        // identity of the instance (same view + memory = same instance)
  int dims = 1;
  int fields = 1; // of the region: an AOS instance interleaves them all
};

struct PointTask {
  int task = 0;
  int launch = 0; // index of the launch this point belongs to (one per launch execution)
  bool index = false;
  std::vector<int64_t> point, domain;
  int parent = -1; // index into Program::tasks; -1: the top-level task
  bool timed = false; // part of the body (the measured part)
  double flops = 0;
  std::vector<Access> accesses;
};

struct Program {
  const AppModel *app = nullptr;
  double size = 0;
  double iterations = 1;
  double flops = 0; // useful flops of the timed part (gflops metric)
  std::map<std::string, double> values; // size and params
  std::vector<Datum> data;
  std::vector<std::string> views;
  std::vector<PointTask> tasks;
  int launches = 0;
};

/// Expands the app for a machine and size (nullopt: the default size). The
/// program refers to `app`, which must outlive it. `maxTasks` bounds the expansion.
support::Expected<Program> instantiate(const AppModel &app, const MachineModel &machine, std::optional<double> size,
                                       size_t maxTasks = 2'000'000);

} // namespace hone::model
