// libFuzzer targets over the rest of what hone reads from outside, one binary
// each (HONE_FUZZ_PARSER selects): AutoGuide rule files (and matching them
// against output and profiles), prompt templates (and rendering them), an
// LLM's reply text (JSON objects and fenced blocks pulled out of prose), and
// the JSON rows a store holds (a run's configuration and its domains'
// options), what Slurm's commands print and a run's Slurm settings, and the TOML performance models (an app instantiated on a shipped
// machine, a machine running a shipped app, each simulated under a policy). Each must return a value or an error on any input -- never
// crash, hang, leak or trip a sanitizer.
#include "autoguide/AutoGuide.h"
#include "cluster/Slurm.h"
#include "kernel/KernelDomain.h"
#include "llm/Client.h"
#include "llm/Prompt.h"
#include "dsl/Frontend.h"
#include "mapping/MappingDomain.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "model/Machine.h"
#include "sim/Simulator.h"
#include "tune/Config.h"

#include <cstddef>
#include <cstdint>
#include <string>

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256 * 1024)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
#if HONE_FUZZ_PARSER == 0
  if (auto rules = hone::autoguide::AutoGuide::parseRules("fuzz.toml", text)) {
    hone::autoguide::AutoGuide guide(*rules);
    json profile{{"bottlenecks", {{{"kind", "channel"}, {"resource", "r"}, {"share", 0.5}, {"detail", "d"}}}}};
    (void)guide.feedback("error: x\nfuzz.map:1:2: error: y\n" + text.substr(0, 512), profile, "mapping",
                         hone::autoguide::FeedbackLevel::ExecExplainSuggest);
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
  (void)hone::cluster::parseSqueue(text);
  (void)hone::cluster::parseScontrolJob(text);
  (void)hone::cluster::parseSacct(text);
  json j = json::parse(text, nullptr, false);
  if (!j.is_discarded())
    if (auto s = hone::cluster::SlurmSettings::fromJson(j))
      (void)hone::cluster::SlurmSettings::fromJson(s->toJson()); // what it writes, it reads
#endif
  return 0;
}
