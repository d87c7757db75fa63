// libFuzzer targets over the rest of what hone reads from outside, one binary
// each (HONE_FUZZ_PARSER selects): AutoGuide rule files (and matching them
// against output and profiles), prompt templates (and rendering them), an
// LLM's reply text (JSON objects and fenced blocks pulled out of prose), and
// the JSON rows a store holds (a run's configuration and its domains'
// options, a step's profile with its evidence), what Slurm's commands print and a run's Slurm settings, and the TOML performance models (an app instantiated on a shipped
// machine, a machine running a shipped app, each simulated under a policy), and the template filler
// every command, job header and prompt goes through (support::fillTemplate: values inserted once,
// never filled again). Each must return a value or an error on any input -- never
// crash, hang, leak or trip a sanitizer.
#include "autoguide/AutoGuide.h"
#include "cluster/Slurm.h"
#include "kernel/KernelDomain.h"
#include "llm/Client.h"
#include "llm/Prompt.h"
#include "support/Feedback.h"
#include "support/Template.h"
#include "dsl/Frontend.h"
#include "mapping/MappingDomain.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "model/Machine.h"
#include "sim/Simulator.h"
#include "tune/Config.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

/// The template filler's contract on any template and values (`text` = template NUL value NUL value
/// ...): each value is inserted verbatim, never filled again. The values are marked with bytes the
/// template and the values do not hold; what lies between marks must be a whole value, and the rest
/// must be the template filled with empty values.
[[maybe_unused]] void fuzzTemplate(const std::string &text) {
  static const char *const kKeys[] = {"policy", "cpp",     "dir",      "hash", "prof", "sources", "out",
                                      "cflags", "defines", "includes", "exe",  "seed", "rundir",  "name",
                                      "time",   "mapper",  ""};
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == '\0')
      parts.emplace_back();
    else if (c != '\x01' && c != '\x02')
      parts.back() += c;
  }
  for (const hone::support::TemplateSyntax &syntax :
       {hone::support::TemplateSyntax{}, hone::support::TemplateSyntax{"{{", "}}", true}}) {
    std::map<std::string, std::string> marked, empty;
    for (size_t i = 0; i < std::size(kKeys); ++i) {
      std::string value = i + 1 < parts.size() ? parts[i + 1] : std::string(kKeys[i]) + "{" + kKeys[i] + "}";
      marked[kKeys[i]] = "\x01" + value + "\x02";
      empty[kKeys[i]] = "";
    }
    std::string out = hone::support::fillTemplate(parts[0], marked, syntax);
    std::string rest;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] != '\x01') {
        rest += out[i];
        continue;
      }
      size_t end = out.find('\x02', i);
      if (end == std::string::npos)
        __builtin_trap();
      std::string inserted = out.substr(i, end - i + 1);
      bool isValue = false;
      for (const auto &[k, v] : marked)
        isValue = isValue || v == inserted;
      if (!isValue)
        __builtin_trap(); // a value was changed after it was inserted
      i = end;
    }
    if (rest != hone::support::fillTemplate(parts[0], empty, syntax))
      __builtin_trap();
  }
  // The job header fills the same way.
  hone::cluster::SlurmSettings settings;
  settings.header = parts[0];
  hone::cluster::JobSpec job;
  job.name = parts.size() > 1 ? parts[1] : "{dir}";
  job.folder = parts.size() > 2 ? parts[2] : "{name}";
  job.process.argv = {"true"};
  (void)hone::cluster::renderJobScript(settings, job);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256 * 1024)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
#if HONE_FUZZ_PARSER == 0
  if (auto rules = hone::autoguide::AutoGuide::parseRules("fuzz.toml", text)) {
    hone::autoguide::AutoGuide guide(*rules);
    hone::support::Evidence evidence;
    evidence.tool = "simulator";
    hone::support::Bottleneck b;
    b.kind = "channel";
    b.subject = "r";
    b.share = 0.5;
    b.detail = "d";
    b.numbers = {{"bytes", {4e9, "bytes"}}};
    evidence.bottlenecks = {b};
    (void)guide.feedback("error: x\nfuzz.map:1:2: error: y\n" + text.substr(0, 512), evidence, json::object(),
                         "mapping", hone::autoguide::FeedbackLevel::ExecExplainSuggest);
  }
#elif HONE_FUZZ_PARSER == 1
  if (auto t = hone::llm::parseTemplate("fuzz.md", text)) {
    std::map<std::string, std::string> values;
    for (const auto &p : t->placeholders)
      values[p] = "{{" + p + "}}"; // a value that looks like a placeholder is not expanded again
    (void)hone::llm::render(*t, values);
    values.clear();
    (void)hone::llm::render(*t, values); // a missing value is an error
  }
#elif HONE_FUZZ_PARSER == 2
  (void)hone::llm::extractJson(text);
  (void)hone::llm::extractCodeBlock(text, "dsl");
  (void)hone::llm::extractCodeBlock(text, "");
#elif HONE_FUZZ_PARSER == 3
  json j = json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    if (auto c = hone::tune::TuneConfig::fromJson(j))
      (void)hone::tune::TuneConfig::fromJson(c->toJson()); // what it writes, it reads
    (void)hone::kernel::KernelOptions::fromJson(j);
    (void)hone::mapping::MappingOptions::fromJson(j);
    // A stored step's profile: its evidence, as a store reads it back; what it writes, it reads.
    if (auto split = hone::support::readEvidence(j)) {
      auto again = hone::support::readEvidence(hone::support::withEvidence(split->profile, split->evidence));
      if (!again || !(again->evidence == split->evidence))
        __builtin_trap();
    }
    // A stored step's feedback, likewise.
    if (auto feedback = hone::support::readFeedback(j)) {
      auto again = hone::support::readFeedback(hone::support::toJson(*feedback));
      if (!again || !(*again == *feedback))
        __builtin_trap();
    }
  }
#elif HONE_FUZZ_PARSER == 4
  using namespace hone;
  static const auto shippedMachine = model::loadMachine(*model::findModel("machines", "p100x4"));
  static const auto shippedApp = model::loadApp(*model::findModel("apps", "stencil"));
  static const support::SourceFile policySource("fuzz.map", "Task * GPU,CPU;\nRegion * * GPU FBMEM;\n");
  static const auto policy = dsl::checkSource(policySource);
  if (!shippedMachine.ok() || !shippedApp.ok() || !policy.ok())
    __builtin_trap(); // the shipped models and the policy must load
  auto simulateOn = [&](const model::AppModel &app, const model::MachineModel &machine) {
    auto program = model::instantiate(app, machine, std::nullopt, 20000);
    if (!program.ok())
      return;
    sim::Context context(machine, *program);
    (void)sim::simulate(context, policy.program);
  };
  if (auto app = model::parseApp("fuzz.toml", text); app.ok())
    simulateOn(*app, *shippedMachine);
  if (auto machine = model::parseMachine("fuzz.toml", text); machine.ok())
    simulateOn(*shippedApp, *machine);
#elif HONE_FUZZ_PARSER == 5
  // What Slurm's commands print (squeue, scontrol show job, sacct) and a run's stored Slurm settings.
  auto queue = hone::cluster::parseSqueue(text);
  for (const auto &[id, st] : queue) { // each job's array tasks, ranges included, among 64 tasks
    auto tasks = hone::cluster::arrayTasks(queue, id.substr(0, id.find('_')), 64);
    if (!tasks.empty() && tasks.rbegin()->first >= 64)
      __builtin_trap();
  }
  (void)hone::cluster::parseScontrolJob(text);
  (void)hone::cluster::parseSacct(text);
  json j = json::parse(text, nullptr, false);
  if (!j.is_discarded())
    if (auto s = hone::cluster::SlurmSettings::fromJson(j))
      (void)hone::cluster::SlurmSettings::fromJson(s->toJson()); // what it writes, it reads
#elif HONE_FUZZ_PARSER == 6
  fuzzTemplate(text);
#endif
  return 0;
}
