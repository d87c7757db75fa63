// hone runs [--db PATH] [--json]
// hone show RUN [--db PATH] [--best] [--trajectory] [--json]
// hone export RUN [--db PATH] --jsonl|--corpus [--out FILE]
// Reading the experiment store: what ran, what each step tried and why, and
// the optimization corpus (diagnostics, change, rationale, result per step).
#include "cli/Commands.h"

#include "report/Export.h"
#include "report/RunView.h"
#include "store/Store.h"
#include "support/Diff.h"
#include "support/FileUtil.h"
#include "support/JsonText.h"
#include "support/StringUtil.h"
#include "tune/LlmOptimizer.h"
#include "tune/Session.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace hone::cli {

using nlohmann::json;

namespace {

/// What a run's candidates are called: mappers, kernel variants.
std::string artifactName(const store::RunInfo &r) { return r.artifactName(); }

} // namespace

void addRunsCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string db = "hone.db";
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("runs", "List the runs of an experiment store");
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print a JSON list");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto st = openStore(opts->db);
      if (!st)
        return kUsage;
      json list = json::array();
      std::string table =
          fmt::format("{:>4}  {:<20}  {:<10}  {:<8}  {:<8}  {:>5}  {:>6}  {:>8}  {}\n", "id", "created (UTC)", "app",
                      "machine", "agent", "seed", "evals", "best", "status");
      for (const auto &r : st->runs()) {
        report::RunView s = report::makeView(r, st->steps(r.id), st->runUsage(r.id));
        list.push_back(report::summaryJson(s));
        table += fmt::format("{:>4}  {:<20}  {:<10}  {:<8}  {:<8}  {:>5}  {:>6}  {:>8}  {}\n", r.id, r.createdAt,
                             r.app, r.machine, r.agent, r.seed,
                             fmt::format("{}/{}", s.steps.size(), s.iterations()),
                             s.best ? fmt::format("{:.3f}", s.bestScore) : "-", r.status);
      }
      if (opts->json)
        std::cout << list.dump(2) << "\n";
      else
        std::cout << (list.empty() ? "no runs yet (hone tune --app APP starts one)\n" : table);
      return kOk;
    };
  });
}


/// What the LLM's prompts weighed: sizes of every request's first messages (system and user), as
/// the steps' notes recorded them; nullopt when no step has one (no LLM, or a run before hone kept it).
struct PromptSizes {
  size_t requests = 0, first = 0, largest = 0, budget = 0, overBudget = 0, shortened = 0;
  int64_t largestStep = 0;
};
std::optional<PromptSizes> promptSizes(const std::vector<store::StepRecord> &steps) {
  PromptSizes p;
  for (const auto &s : steps) {
    if (!s.notes.is_object() || !s.notes.contains("prompt_bytes") || !s.notes["prompt_bytes"].is_number_unsigned())
      continue;
    size_t bytes = s.notes["prompt_bytes"].get<size_t>();
    size_t budget = s.notes.contains("prompt_budget") && s.notes["prompt_budget"].is_number_unsigned()
                        ? s.notes["prompt_budget"].get<size_t>()
                        : 0;
    if (p.requests++ == 0)
      p.first = bytes;
    if (bytes > p.largest) {
      p.largest = bytes;
      p.largestStep = s.sequence;
    }
    p.budget = std::max(p.budget, budget);
    p.overBudget += budget > 0 && bytes > budget;
    p.shortened += s.notes.contains("trimmed");
  }
  return p.requests > 0 ? std::optional<PromptSizes>(p) : std::nullopt;
}

std::string promptSizesText(const PromptSizes &p) {
  return fmt::format("prompts: {} requests, the first {} bytes, the largest {} (step {}); budget {}{}{}\n", p.requests,
                     p.first, p.largest, p.largestStep, p.budget > 0 ? fmt::format("{} bytes", p.budget) : "none",
                     p.shortened > 0 ? fmt::format(", {} shortened to fit it", p.shortened) : "",
                     p.overBudget > 0 ? fmt::format(", {} over it even so", p.overBudget) : "");
}

/// One step for a reader: the result, the mapper, the feedback, and the conversation that made it.
void printStep(const store::RunInfo &run, const std::vector<store::StepRecord> &steps, const store::StepRecord &s) {
  double baseline = support::numberOf(run.config, "baseline");
  std::cout << fmt::format("step {}: {}{}\n", s.sequence, s.status,
                           s.status == "ok" ? ", score " + store::scoreText(s.score, baseline)
                                            : ": " + support::printable(s.error));
  std::cout << fmt::format("rationale: {}\n", support::printable(s.rationale));
  if (!s.parent.empty()) {
    auto parent = std::find_if(steps.begin(), steps.end(), [&](const store::StepRecord &p) { return p.hash == s.parent; });
    std::cout << (parent != steps.end() ? fmt::format("derived from: step {} ({})\n", parent->sequence, s.parent)
                                        : fmt::format("derived from: {}\n", s.parent));
  }
  std::cout << "\n--- " << artifactName(run) << " " << s.hash << " ---\n" << support::printable(s.artifact, true);
  if (!s.artifact.empty() && s.artifact.back() != '\n')
    std::cout << "\n";
  std::cout << "\n--- feedback ---\n" << support::printable(tune::feedbackText(s.feedback), true);
  if (s.notes.is_object() && s.notes.contains("messages")) {
    const json &n = s.notes;
    std::cout << fmt::format("\n--- conversation ({}, seed {}, {} call{}, {} repair{}, {} prompt + {} completion "
                             "tokens, cost {:.4f}{}) ---\n",
                             support::textOf(n, "optimizer", "?"), n.contains("seed") ? n["seed"].dump() : "-",
                             static_cast<int64_t>(support::numberOf(n, "calls")), static_cast<int64_t>(support::numberOf(n, "calls")) == 1 ? "" : "s", static_cast<int64_t>(support::numberOf(n, "repairs")),
                             static_cast<int64_t>(support::numberOf(n, "repairs")) == 1 ? "" : "s", s.promptTokens, s.completionTokens, s.cost,
                             n.value("cached", false) ? ", from the cache" : "");
    if (n.contains("prompt_bytes"))
      std::cout << fmt::format("(prompt: {} bytes{}{})\n", n["prompt_bytes"].dump(),
                               n.contains("prompt_budget") ? " of a budget of " + n["prompt_budget"].dump() : "",
                               n.contains("trimmed") ? "; shortened: " + support::printable(n["trimmed"].dump()) : "");
    for (const auto &m : n["messages"])
      std::cout << "[" << support::printable(support::textOf(m, "role", "?")) << "]\n"
                << support::printable(support::textOf(m, "content"), true) << "\n\n";
  }
}

void addShowCommand(CLI::App &app, Action &action) {
  struct Options {
    int64_t run = 0;
    std::string db = "hone.db";
    bool best = false, trajectory = false, json = false;
    std::optional<int64_t> step;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("show", "Show a run: its configuration, best mapper or kernel variant, and trajectory");
  cmd->add_option("run", opts->run, "Run id")->required();
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_flag("--best", opts->best, "Print the best mapper (or kernel variant)");
  cmd->add_flag("--trajectory", opts->trajectory, "Print every step with the best score so far");
  cmd->add_option("--step", opts->step, "Print one step: its mapper, result, feedback and (LLM runs) conversation");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto opened = openRun(opts->db, opts->run);
      if (!opened)
        return kUsage;
      const store::RunInfo *run = &opened->run;
      const auto &steps = opened->steps;
      report::RunView s = report::makeView(*run, steps, opened->store->runUsage(run->id));
      if (opts->step) {
        if (*opts->step < 0 || static_cast<size_t>(*opts->step) >= steps.size()) {
          std::cerr << fmt::format("hone: run {} has no step {} (it has steps 0 to {})\n", run->id, *opts->step,
                                   static_cast<int64_t>(steps.size()) - 1);
          return kUsage;
        }
        if (opts->json) {
          // One step in full: with the profile its evaluation produced (the model's, or a real run's).
          json j = report::stepJson(*run, steps, static_cast<size_t>(*opts->step));
          const store::StepRecord &step = steps[static_cast<size_t>(*opts->step)];
          j["profile"] = support::withEvidence(step.profile, step.evidence);
          std::cout << j.dump(2) << "\n";
        }
        else
          printStep(*run, steps, steps[static_cast<size_t>(*opts->step)]);
        return kOk;
      }
      if (opts->json) {
        json j = report::summaryJson(s);
        if (auto p = promptSizes(steps))
          j["prompts"] = {{"requests", p->requests}, {"first_bytes", p->first},     {"largest_bytes", p->largest},
                          {"largest_step", p->largestStep}, {"budget_bytes", p->budget}, {"shortened", p->shortened},
                          {"over_budget", p->overBudget}};
        if (s.best)
          j["best_" + artifactName(*run)] = steps[*s.best].artifact;
        json traj = json::array();
        for (size_t i = 0; i < steps.size(); ++i) {
          const store::StepRecord &step = steps[i];
          traj.push_back({{"step", step.sequence},
                          {"hash", step.hash},
                          {"parent", step.parent},
                          {"status", step.status},
                          {"score", step.score},
                          {"best_so_far", s.bestSoFar[i]},
                          {"rationale", step.rationale},
                          {"error", step.error},
                          {"metrics", step.metrics},
                          {"seconds", step.seconds},
                          {"tokens", step.promptTokens + step.completionTokens}});
        }
        j["trajectory"] = traj;
        j["config"] = run->config;
        j["config"].erase("start"); // the start mapper's text is long; hone show --best / export have texts
        std::cout << j.dump(2) << "\n";
        return kOk;
      }
      if (opts->best) {
        if (!s.best) {
          std::cerr << fmt::format("hone: run {} has no successful step\n", run->id);
          return kRejected;
        }
        std::cout << steps[*s.best].artifact;
        return kOk;
      }
      std::cout << fmt::format("run {}: {} on {}, {} agent, seed {}, {} ({})\n", run->id, run->app, run->machine,
                               run->agent, run->seed, run->status, run->createdAt);
      std::cout << fmt::format("scores relative to {}\n", support::textOf(run->config, "baseline_label", "?"));
      std::cout << fmt::format("{} of {} evaluations, {} failed\n", s.steps.size(), s.iterations(),
                               s.failures);
      double baseline = support::numberOf(run->config, "baseline");
      if (s.best)
        std::cout << fmt::format("best: {} at step {}: {}\n", store::scoreText(s.bestScore, baseline), *s.best,
                                 support::printable(steps[*s.best].rationale));
      if (auto u = opened->store->runUsage(run->id); u.calls > 0)
        std::cout << fmt::format("llm: {} calls, {} prompt + {} completion tokens, cost {:.4f} "
                                 "(hone export {} --jsonl has every prompt and reply)\n",
                                 u.calls, u.promptTokens, u.completionTokens, u.cost, run->id);
      if (auto p = promptSizes(steps))
        std::cout << promptSizesText(*p);
      if (opts->trajectory) {
        std::cout << fmt::format("\n{:>4}  {:<12}  {:>8}  {:>8}  {}\n", "step", "status", "score", "best", "rationale");
        for (size_t i = 0; i < steps.size(); ++i) {
          const store::StepRecord &step = steps[i];
          // The rationale and the error come from an agent, a model or a program: escaped.
          std::string what = support::printable(step.status == "ok" ? step.rationale : step.rationale + " -- " + step.error);
          std::cout << fmt::format("{:>4}  {:<12}  {:>8}  {:>8}  {}\n", step.sequence, step.status,
                                   step.status == "ok" ? store::scoreText(step.score, baseline) : "-",
                                   store::scoreText(s.bestSoFar[i], baseline), what);
        }
      } else {
        std::cout << fmt::format("(hone show {0} --trajectory for every step, --best for the {1})\n", run->id,
                                 artifactName(*run));
      }
      return kOk;
    };
  });
}

void addExportCommand(CLI::App &app, Action &action) {
  struct Options {
    int64_t run = 0;
    std::string db = "hone.db", out;
    bool jsonl = false, corpus = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("export", "Export a run as JSON Lines: every step, or the optimization corpus");
  cmd->add_option("run", opts->run, "Run id")->required();
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  auto *jsonl = cmd->add_flag("--jsonl", opts->jsonl, "Every step with its conversation (one JSON object per line)");
  auto *corpus = cmd->add_flag("--corpus", opts->corpus,
                               "The optimization corpus: one line per evaluated candidate (docs/corpus.schema.json)");
  jsonl->excludes(corpus);
  cmd->add_option("--out", opts->out, "Write to this file (default: standard output)");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto opened = openRun(opts->db, opts->run);
      if (!opened)
        return kUsage;
      const store::RunInfo *run = &opened->run;
      const auto &steps = opened->steps;
      std::string text;
      if (!opts->jsonl && !opts->corpus) {
        std::cerr << "hone: export: say --jsonl (every step) or --corpus (the optimization corpus)\n";
        return kUsage;
      }
      for (size_t i = 0; i < steps.size(); ++i) {
        json line = opts->corpus ? report::corpusJson(*run, steps, i) : report::stepJson(*run, steps, i);
        text += line.dump() + "\n";
      }
      if (opts->out.empty()) {
        std::cout << text;
        return kOk;
      }
      std::string why;
      if (!support::writeFileAtomically(opts->out, text, &why)) {
        std::cerr << "hone: --out: " << why << "\n";
        return kUsage;
      }
      std::cerr << fmt::format("hone: wrote {} steps of run {} to {}\n", steps.size(), run->id, opts->out);
      return kOk;
    };
  });
}

} // namespace hone::cli
