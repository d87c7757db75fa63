// The guided mapping agent's ideas, internal to src/mapping: the edit generators, one per idea, grouped
// by the kind of bottleneck each answers (as schedule rules are in TVM's MetaSchedule), the edits the
// task statistics call for, exploration (GuidedGenerators.cpp), and the repair of failures
// (GuidedRepair.cpp). Each reads an explicit Context and appends edits with their estimated gains.
#pragma once

#include "mapping/GuidedEdits.h"
#include "sim/Simulator.h"
#include "support/Evidence.h"
#include "support/Feedback.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace hone::mapping::guided {

/// A bottleneck as the edit generators read it: what it is about, its sentence, its share and the
/// best mapper's elapsed time.
struct Hit {
  std::string resource = {}, detail = {};
  double share = 0, elapsed = 0;
};

/// An edit generator: appends the edits it proposes for a bottleneck.
using Generator = void (*)(const Context &ctx, const Hit &h, std::vector<Edit> &edits);

/// The edit generators of each kind of bottleneck the simulator (or legion_prof) names, in the order
/// they run: one per idea, as schedule rules are in TVM's MetaSchedule. A kind with none (access:
/// slowArguments reads the task statistics instead) proposes nothing here.
const std::map<sim::BottleneckKind, std::vector<Generator>> &generators();

/// variant: run the task on a kind whose variant would be faster first.
void fasterVariant(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// channel: copies between memories. Keep data where the work is: shared regions go to memory every
/// piece reaches (zero-copy), children run where their parent runs, the setup tasks that write a
/// task's inputs are placed like it, and read-only inputs of the busiest leaves may be read in place.
void keepDataLocal(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// idle, processor: processors wait for work: place the producers and consumers together, and spread
/// the launches differently (pointless when all are busy).
void spreadWork(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// processor: stage a GPU task's data through host memory, unless all are busy.
void stageThroughHostFor(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// channel, runtime: a task writes where its readers read.
void writeWhereReadFor(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// processor: processors wait; more instances in flight per processor overlap copies with work.
void moreInstancesInFlight(const Context &ctx, const Hit &h, std::vector<Edit> &edits);
/// memory: collect read-only instances after use, and bound instances in flight.
void releaseMemory(const Context &ctx, const Hit &h, std::vector<Edit> &edits);

/// Runs the generators of the bottleneck's kind (none for a kind that is not the simulator's).
void addressBottleneck(const Context &ctx, const support::Bottleneck &b, std::vector<Edit> &edits);
/// Tasks that spend more than their fastest memories would take: move each argument that is not in
/// the fastest memory of the task's processor.
void slowArguments(const Context &ctx, std::vector<Edit> &edits);
/// Tasks whose read-only inputs are copied again because CollectMemory released them after an
/// earlier use on the same processor: stop collecting them, unless memory is what is short.
void recopies(const Context &ctx, std::vector<Edit> &edits);
/// Single changes on the busiest tasks: other memories, placements, processor orders.
void explore(const Context &ctx, std::vector<Edit> &edits);

/// Edits the best mapper's profile and evidence call for (none before a best), ranked by the time each
/// could save (the evidence's numbers), then exploration.
std::vector<Edit> rankedEdits(const Context &ctx);

/// Edits that address a failure, read from the error, its detail and AutoGuide's findings.
std::vector<Edit> fixesFor(const Context &ctx, const std::string &evidence, const nlohmann::json &profile,
                           const support::Feedback &feedback);

} // namespace hone::mapping::guided
