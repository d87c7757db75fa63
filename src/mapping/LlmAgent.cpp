#include "mapping/LlmAgent.h"

#include "mapping/Evaluators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace hone::mapping {

LlmAgent::LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start,
                   std::string startLabel, llm::Client &client, LlmAgentOptions options)
    : tune::LlmOptimizer(std::make_unique<MapperCodec>(app, machine, options.program, options.dslReference,
                                                       options.promptDirs),
                         std::move(start), std::move(startLabel), client, options) {} // a copy: the codec reads options too

std::string MapperCodec::appDescription() const {
  std::string out = app_.description.empty() ? app_.name : app_.name + ": " + app_.description;
  out += "\nTasks (variants; region arguments with privileges):\n";
  for (const auto &t : app_.tasks) {
    std::vector<std::string> kinds, args;
    for (auto k : t.variants)
      kinds.emplace_back(model::toString(k));
    for (const auto &a : t.args)
      args.push_back(fmt::format("{} ({})", a.region, model::toString(a.privilege)));
    out += fmt::format("- {} [{}]{}{}\n", t.name, fmt::join(kinds, ","), args.empty() ? "" : ": ",
                       fmt::join(args, ", "));
  }
  if (!program_)
    return out;
  // Sizes at the problem size being tuned: what each region holds, how many points each task runs.
  const model::Program &p = *program_;
  out += fmt::format("Problem size: {} = {:g}{}\n", app_.sizeName.empty() ? "size" : app_.sizeName, p.size,
                     app_.sizeDoc.empty() ? "" : " (" + app_.sizeDoc + ")");
  std::vector<double> regionBytes(app_.regions.size(), 0);
  for (const auto &d : p.data)
    if (d.region >= 0 && static_cast<size_t>(d.region) < regionBytes.size())
      regionBytes[static_cast<size_t>(d.region)] += d.bytes;
  out += "Regions (total size; fields):\n";
  for (size_t r = 0; r < app_.regions.size(); ++r) {
    std::vector<std::string> fields;
    for (const auto &f : app_.regions[r].fields)
      fields.push_back(f.name);
    out += fmt::format("- {} ({:.4g} MB; {})\n", app_.regions[r].name, regionBytes[r] / 1e6, fmt::join(fields, ","));
  }
  if (!app_.partitions.empty()) {
    out += "Partitions (of region):\n";
    for (const auto &part : app_.partitions)
      out += fmt::format("- {} (of {})\n", part.name, part.region);
  }
  std::vector<size_t> points(app_.tasks.size(), 0);
  std::vector<double> bytes(app_.tasks.size(), 0);
  for (const auto &t : p.tasks) {
    if (t.task < 0 || static_cast<size_t>(t.task) >= points.size())
      continue;
    ++points[static_cast<size_t>(t.task)];
    for (const auto &a : t.accesses)
      bytes[static_cast<size_t>(t.task)] += a.instanceBytes;
  }
  out += "Point tasks per run (average data per point):\n";
  for (size_t t = 0; t < app_.tasks.size(); ++t)
    if (points[t] > 0)
      out += fmt::format("- {}: {} ({:.4g} MB)\n", app_.tasks[t].name, points[t],
                         bytes[t] / static_cast<double>(points[t]) / 1e6);
  return out;
}

std::string MapperCodec::machineDescription() const {
  std::string out = machine_.describe() + "\nMemories:\n";
  for (const auto &m : machine_.memories) {
    std::vector<std::string> from;
    for (const auto &a : m.access)
      if (std::string k(model::toString(a.proc)); std::find(from.begin(), from.end(), k) == from.end())
        from.push_back(k);
    out += fmt::format("- {} ({:.3g} GB{}), reachable from {}\n", model::toString(m.kind), m.capacity / 1e9,
                       m.per ? fmt::format(" per {}", model::toString(*m.per)) : " per node", fmt::join(from, ","));
  }
  return out;
}

support::Expected<std::map<std::string, std::string>> MapperCodec::promptValues() const {
  std::string dsl = dslReference_;
  if (dsl.empty())
    if (auto ref = llm::loadTemplate("mapping", "dsl", promptDirs_))
      dsl = ref->text;
  return std::map<std::string, std::string>{{"app", app_.name},
                                            {"machine", machine_.name},
                                            {"dsl", dsl},
                                            {"machine_description", machineDescription()},
                                            {"app_description", appDescription()}};
}

std::optional<tune::LlmRejection> MapperCodec::check(const std::string &artifact) const {
  auto rejected = rejectIfInvalid(artifact, &app_);
  if (!rejected)
    return std::nullopt;
  return tune::LlmRejection{rejected->profile.dump(2), rejected->rawOutput};
}

} // namespace hone::mapping
