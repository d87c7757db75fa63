#include "cli/Tuning.h"

#include "autoguide/AutoGuide.h"
#include "cli/Commands.h"
#include "mapping/Agents.h"
#include "mapping/LlmAgent.h"
#include "mapping/Space.h"
#include "model/App.h"
#include "store/Store.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <unistd.h>

namespace hone::cli {

using nlohmann::json;

json TuneConfig::toJson() const {
  json j{{"app", app},
         {"machine", machine},
         {"agent", agent},
         {"iterations", iterations},
         {"seed", seed},
         {"start", start},
         {"start_label", startLabel},
         {"jobs", jobs},
         {"feedback", feedback},
         {"rules", rules},
         {"noise", noise},
         {"wall_time_s", wallTimeS},
         {"patience", patience},
         {"evaluator", evaluator},
         {"baseline", baseline},
         {"baseline_label", baselineLabel}};
  if (size)
    j["size"] = *size;
  if (target)
    j["target"] = *target;
  if (evaluator == "command")
    j["command"] = {{"build", command.build},       {"run", command.run},
                    {"metric", command.metric},     {"higher_is_better", command.higherIsBetter},
                    {"timeout_s", command.timeoutS}, {"memory_limit_bytes", command.memoryLimitBytes},
                    {"workdir", command.workdir}};
  if (agent == "llm") {
    const llm::Settings &c = llm.client;
    j["llm"] = {{"preset", c.preset},
                {"url", c.url},
                {"model", c.model},
                {"config_file", c.configFile},
                {"retries", c.retries},
                {"concurrency", c.concurrency},
                {"cache", c.cachePath},
                {"replay", c.replay},
                {"token_budget", c.tokenBudget},
                {"money_budget", c.moneyBudget},
                {"optimizer", llm.optimizer},
                {"repairs", llm.repairs},
                {"history", llm.history},
                {"temperature", llm.temperature},
                {"max_tokens", llm.maxTokens},
                {"prompt_dirs", llm.promptDirs}};
    if (c.timeoutS)
      j["llm"]["timeout_s"] = *c.timeoutS;
    if (c.pricePrompt)
      j["llm"]["price_prompt"] = *c.pricePrompt;
    if (c.priceCompletion)
      j["llm"]["price_completion"] = *c.priceCompletion;
  }
  return j;
}

support::Expected<TuneConfig> TuneConfig::fromJson(const json &j) {
  try {
    TuneConfig c;
    c.app = j.at("app").get<std::string>();
    c.machine = j.at("machine").get<std::string>();
    c.agent = j.at("agent").get<std::string>();
    c.iterations = j.at("iterations").get<size_t>();
    c.seed = j.at("seed").get<uint64_t>();
    c.start = j.value("start", "");
    c.startLabel = j.value("start_label", "");
    c.jobs = j.value("jobs", size_t{1});
    c.feedback = j.value("feedback", c.feedback);
    c.rules = j.value("rules", std::vector<std::string>{});
    c.noise = j.value("noise", 0.0);
    c.wallTimeS = j.value("wall_time_s", 0.0);
    c.patience = j.value("patience", size_t{0});
    c.evaluator = j.value("evaluator", "model");
    c.baseline = j.value("baseline", 0.0);
    c.baselineLabel = j.value("baseline_label", "");
    if (j.contains("size"))
      c.size = j["size"].get<double>();
    if (j.contains("target"))
      c.target = j["target"].get<double>();
    if (j.contains("command")) {
      const json &k = j["command"];
      c.command.build = k.value("build", "");
      c.command.run = k.value("run", "");
      c.command.metric = k.value("metric", "");
      c.command.higherIsBetter = k.value("higher_is_better", false);
      c.command.timeoutS = k.value("timeout_s", 600.0);
      c.command.memoryLimitBytes = k.value("memory_limit_bytes", size_t{0});
      c.command.workdir = k.value("workdir", "");
    }
    if (j.contains("llm")) {
      const json &k = j["llm"];
      llm::Settings &l = c.llm.client;
      l.preset = k.value("preset", "");
      l.url = k.value("url", "");
      l.model = k.value("model", "");
      l.configFile = k.value("config_file", "");
      l.retries = k.value("retries", 2);
      l.concurrency = k.value("concurrency", 4);
      l.cachePath = k.value("cache", "");
      l.replay = k.value("replay", false);
      l.tokenBudget = k.value("token_budget", int64_t{0});
      l.moneyBudget = k.value("money_budget", 0.0);
      if (k.contains("timeout_s"))
        l.timeoutS = k["timeout_s"].get<double>();
      if (k.contains("price_prompt"))
        l.pricePrompt = k["price_prompt"].get<double>();
      if (k.contains("price_completion"))
        l.priceCompletion = k["price_completion"].get<double>();
      c.llm.optimizer = k.value("optimizer", "trace");
      c.llm.repairs = k.value("repairs", 2);
      c.llm.history = k.value("history", size_t{5});
      c.llm.temperature = k.value("temperature", 0.7);
      c.llm.maxTokens = k.value("max_tokens", 0);
      c.llm.promptDirs = k.value("prompt_dirs", std::vector<std::string>{});
    }
    return c;
  } catch (const json::exception &e) {
    return support::Error{fmt::format("the run's stored configuration is incomplete: {}", e.what())};
  }
}

namespace {

store::StepRecord toRecord(const engine::Step &s, int64_t sequence) {
  store::StepRecord r;
  r.sequence = sequence;
  r.artifact = s.candidate.artifact;
  r.hash = s.candidate.hash;
  r.parent = s.candidate.parent;
  r.rationale = s.candidate.rationale;
  r.status = std::string(engine::toString(s.result.status));
  r.score = s.result.score;
  r.metrics = s.result.metrics;
  r.error = s.result.error;
  r.rawOutput = s.result.rawOutput;
  r.profile = s.result.profile;
  r.seconds = s.result.seconds;
  r.feedback = s.feedback;
  r.notes = s.candidate.notes;
  if (r.notes.is_object()) { // the LLM agent's conversation: its tokens and cost, summable in SQL
    const json &usage = r.notes.value("usage", json::object());
    r.promptTokens = usage.value("prompt_tokens", int64_t{0});
    r.completionTokens = usage.value("completion_tokens", int64_t{0});
    r.cost = r.notes.value("cost", 0.0);
  }
  return r;
}

engine::Step fromRecord(const store::StepRecord &r) {
  engine::Step s;
  s.candidate.artifact = r.artifact;
  s.candidate.hash = r.hash;
  s.candidate.parent = r.parent;
  s.candidate.rationale = r.rationale;
  s.candidate.notes = r.notes;
  s.result.status = engine::parseEvalStatus(r.status).value_or(engine::EvalStatus::Invalid);
  s.result.score = r.score;
  if (r.metrics.is_object())
    for (const auto &[k, v] : r.metrics.items())
      if (v.is_number())
        s.result.metrics[k] = v.get<double>();
  s.result.error = r.error;
  s.result.rawOutput = r.rawOutput;
  s.result.profile = r.profile;
  s.result.seconds = r.seconds;
  s.feedback = r.feedback;
  return s;
}

store::RunUsage usageOf(const llm::Client &client) {
  auto t = client.totals();
  return {t.promptTokens, t.completionTokens, client.cost(), client.calls()};
}

/// Records each step in its own transaction, and what the LLM has cost so far;
/// a failure to record is reported once and stops nothing.
class StoreRecorder final : public engine::Recorder {
public:
  StoreRecorder(store::Store &store, int64_t run, int64_t next, const llm::Client *client)
      : store_(store), run_(run), next_(next), client_(client) {}
  void record(const engine::Step &step) override {
    auto ok = store_.recordStep(run_, toRecord(step, next_));
    if (ok && client_)
      ok = store_.setRunUsage(run_, usageOf(*client_));
    if (!ok && !warned_) {
      std::cerr << "hone: warning: cannot record step " << next_ << ": " << ok.error().message << "\n";
      warned_ = true;
    }
    ++next_;
  }

private:
  store::Store &store_;
  int64_t run_;
  int64_t next_;
  const llm::Client *client_;
  bool warned_ = false;
};

/// The K-shot examples: the shipped mappers of the other applications, by name.
std::vector<mapping::ExampleMapper> examplesFor(const std::string &app) {
  std::vector<mapping::ExampleMapper> out;
  for (const auto &path : mapping::exampleMappers()) {
    std::string name = std::filesystem::path(path).stem().string();
    if (name == app)
      continue;
    if (auto text = support::readFile(path))
      out.push_back({fmt::format("the expert mapper of {}", name), *text}); // no path: prompts are the same anywhere
  }
  return out;
}

std::string scoreText(double score, const TuneConfig &c) {
  return c.baseline > 0 ? fmt::format("{:.3f}x", score) : fmt::format("{:.4g}", score);
}

} // namespace

std::optional<TuneReport> runTune(TuneConfig &config, const std::string &db, std::optional<int64_t> resumeRun,
                                  const std::string &bestFile, bool progress) {
  auto t0 = std::chrono::steady_clock::now();
  auto level = autoguide::parseFeedbackLevel(config.feedback);
  if (!level) {
    std::cerr << "hone: --feedback: '" << config.feedback
              << "' is not one of exec, exec+explain, exec+explain+suggest\n";
    return std::nullopt;
  }
  if (config.agent != "llm" && std::find(mapping::kAgentNames.begin(), mapping::kAgentNames.end(), config.agent) ==
                                    mapping::kAgentNames.end()) {
    std::cerr << "hone: --agent: '" << config.agent << "' is not one of guided, ensemble, random, llm\n";
    return std::nullopt;
  }
  // The LLM's client first: a missing model or key is a usage error before anything runs.
  std::unique_ptr<llm::Client> client;
  std::string llmCache;
  if (config.agent == "llm") {
    if (auto k = mapping::parseOptimizer(config.llm.optimizer); !k) {
      std::cerr << "hone: --optimizer: " << k.error().message << "\n";
      return std::nullopt;
    }
    llm::Settings settings = config.llm.client;
    // Every run can be resumed and replayed from its own store (the one given now: the stored
    // configuration keeps the cache empty unless the user named one).
    if (settings.cachePath.empty())
      settings.cachePath = db;
    settings.seed = config.seed;
    auto resolved = llm::resolve(settings, [](const char *name) { return std::getenv(name); });
    if (!resolved) {
      std::cerr << "hone: " << resolved.error().message << "\n";
      return std::nullopt;
    }
    for (const auto &w : resolved->warnings)
      std::cerr << "hone: warning: " << w << "\n";
    auto made = llm::Client::make(resolved->client);
    if (!made) {
      std::cerr << "hone: " << made.error().message << "\n";
      return std::nullopt;
    }
    client = std::move(*made);
    llmCache = settings.cachePath;
  }
  auto guide = autoguide::AutoGuide::withDefaults(config.rules);
  if (!guide) {
    std::cerr << "hone: " << guide.error().message << "\n";
    return std::nullopt;
  }
  auto models = loadModels(config.app, config.machine, config.size);
  if (!models)
    return std::nullopt;
  mapping::Space space = mapping::Space::build(*models->app, *models->machine);
  mapping::ModelEvaluator modelEval(*models->machine, *models->app, *models->program, config.noise);
  std::optional<mapping::CommandEvaluator> commandEval;
  if (config.evaluator == "command") {
    auto made = mapping::CommandEvaluator::make(config.command);
    if (!made) {
      std::cerr << "hone: " << made.error().message << "\n";
      return std::nullopt;
    }
    commandEval.emplace(std::move(*made));
  } else if (config.evaluator != "model") {
    std::cerr << "hone: --evaluator: '" << config.evaluator << "' is not one of model, command\n";
    return std::nullopt;
  }
  auto evaluateOne = [&](const engine::Candidate &c) {
    return commandEval ? commandEval->evaluate(c) : modelEval.evaluate(c);
  };

  std::string expertText;
  std::optional<std::string> expertPath = mapping::findExpertMapper(models->app->name);
  if (expertPath)
    if (auto text = support::readFile(*expertPath))
      expertText = *text;

  auto opened = store::Store::open(db);
  if (!opened) {
    std::cerr << "hone: --db " << db << ": " << opened.error().message << "\n";
    return std::nullopt;
  }
  store::Store &st = **opened;
  std::vector<engine::Step> history;
  TuneReport report;
  report.llmCache = llmCache;

  if (!resumeRun) {
    if (config.start.empty()) {
      if (!expertText.empty()) {
        config.start = expertText;
        config.startLabel = fmt::format("the expert mapper {}", *expertPath);
      } else {
        config.start = space.render(space.defaults());
        config.startLabel = "the decision space's defaults (no expert mapper for this app)";
      }
    }
    // The reference that scores 1.0: the expert mapper (else the start), measured once.
    const std::string &reference = expertText.empty() ? config.start : expertText;
    engine::EvalResult ref = evaluateOne(engine::Candidate::make(reference));
    double measured = ref.ok() ? (commandEval ? ref.metrics["metric"] : ref.metrics["throughput"]) : 0;
    if (measured > 0) {
      config.baseline = measured;
      config.baselineLabel = expertText.empty() ? "the starting mapper" : "the expert mapper " + *expertPath;
    } else {
      config.baselineLabel = fmt::format("raw {} ({} failed: {})", commandEval ? "metric" : "throughput",
                                         expertText.empty() ? "the starting mapper" : "the expert mapper",
                                         ref.error.empty() ? "no result" : ref.error);
    }
    store::RunInfo info;
    info.app = config.app;
    info.machine = config.machine;
    info.agent = config.agent;
    info.seed = config.seed;
    info.config = config.toJson();
    auto id = st.createRun(info);
    if (!id) {
      std::cerr << "hone: --db " << db << ": " << id.error().message << "\n";
      return std::nullopt;
    }
    report.runId = *id;
  } else {
    report.runId = *resumeRun;
    for (const auto &r : st.steps(*resumeRun))
      history.push_back(fromRecord(r));
    auto marked = st.setRunStatus(*resumeRun, "running");
    (void)marked;
  }
  modelEval.setBaseline(config.baseline);
  if (commandEval)
    commandEval->setBaseline(config.baseline);

  std::unique_ptr<engine::Strategy> agent;
  if (config.agent == "random")
    agent = mapping::makeRandomAgent(space, config.seed);
  else if (config.agent == "ensemble")
    agent = mapping::makeEnsembleAgent(space, config.seed);
  else if (config.agent == "llm") {
    mapping::LlmAgentOptions o;
    o.optimizer = config.llm.optimizer;
    o.repairs = config.llm.repairs;
    o.history = config.llm.history;
    o.temperature = config.llm.temperature;
    o.maxTokens = config.llm.maxTokens;
    o.promptDirs = config.llm.promptDirs;
    o.seed = static_cast<int64_t>(config.seed);
    o.program = models->program.get();
    if (*mapping::parseOptimizer(o.optimizer) > 0)
      o.examples = examplesFor(models->app->name);
    agent = std::make_unique<mapping::LlmAgent>(*models->app, *models->machine, config.start, config.startLabel,
                                                *client, std::move(o));
  } else
    agent = mapping::makeGuidedAgent(space, *models->app, config.start, config.startLabel, config.seed);

  engine::FeedbackFn feedback = [&](const engine::Candidate &, const engine::EvalResult &r) {
    return guide->feedback(r.rawOutput, r.profile, "mapping", *level);
  };
  engine::PoolEvaluator pool(evaluateOne, config.jobs);
  StoreRecorder recorder(st, report.runId, static_cast<int64_t>(history.size()), client.get());
  engine::LoopOptions options;
  options.budget = config.iterations;
  options.batch = std::max<size_t>(1, config.jobs);
  if (config.wallTimeS > 0)
    options.stop = options.stop | engine::StopCondition::wallTime(config.wallTimeS);
  if (config.patience > 0)
    options.stop = options.stop | engine::StopCondition::noImprovement(config.patience);
  if (config.target)
    options.stop = options.stop | engine::StopCondition::target(*config.target);
  std::string last;
  if (progress)
    options.onStep = [&](const engine::Step &s, const engine::Progress &p) {
      std::string status(engine::toString(s.result.status));
      std::cerr << fmt::format("\r\033[K[{}/{}] best {} | last: {}{}", p.evaluations, config.iterations,
                               p.evaluations > p.failures ? scoreText(p.bestScore, config) : "-", status,
                               s.result.ok() ? " " + scoreText(s.result.score, config) : "")
                << std::flush;
    };
  report.outcome = engine::runLoop(*agent, pool, feedback, &recorder, options, history);
  if (progress)
    std::cerr << "\r\033[K" << std::flush;
  (void)st.setRunStatus(report.runId, "finished");
  if (client) {
    report.usage = usageOf(*client);
    (void)st.setRunUsage(report.runId, report.usage);
  }

  if (report.outcome.best) {
    report.bestText = report.outcome.steps[*report.outcome.best].candidate.artifact;
    report.bestFile = bestFile.empty() ? fmt::format("hone-best-{}-run{}.map", config.app, report.runId) : bestFile;
    std::string header = fmt::format("# hone tune: best of run {} ({}, {} agent, score {} relative to {})\n",
                                     report.runId, config.app, config.agent,
                                     scoreText(report.outcome.progress.bestScore, config), config.baselineLabel);
    std::string why;
    if (!support::writeFileAtomically(report.bestFile, header + report.bestText, &why)) {
      std::cerr << "hone: warning: cannot write " << report.bestFile << ": " << why << "\n";
      report.bestFile.clear();
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

json reportJson(const TuneReport &report, const TuneConfig &config) {
  const auto &o = report.outcome;
  json j{{"run_id", report.runId},
         {"app", config.app},
         {"machine", config.machine},
         {"agent", config.agent},
         {"seed", config.seed},
         {"evaluations", o.progress.evaluations},
         {"failures", o.progress.failures},
         {"best_score", o.best ? o.progress.bestScore : 0.0},
         {"best_file", report.bestFile.empty() ? json() : json(report.bestFile)},
         {"best_step", o.best ? json(*o.best) : json()},
         {"score_relative_to", config.baselineLabel},
         {"stop_reason", o.stopReason},
         {"seconds", report.seconds}};
  if (o.best)
    j["best_metrics"] = o.steps[*o.best].result.metrics;
  const auto &u = report.usage;
  j["tokens"] = {{"prompt", u.promptTokens}, {"completion", u.completionTokens},
                 {"total", u.promptTokens + u.completionTokens}};
  j["cost"] = u.cost;
  j["llm_calls"] = u.calls;
  if (config.agent == "llm")
    j["llm"] = {{"model", config.llm.client.model}, {"optimizer", config.llm.optimizer},
                {"feedback", config.feedback}, {"cache", report.llmCache},
                {"replay", config.llm.client.replay}};
  return j;
}

void printReport(const TuneReport &report, const TuneConfig &config, const std::string &db) {
  const auto &o = report.outcome;
  std::cout << fmt::format("hone tune: {} on {}, {} agent, seed {}; scores relative to {}\n\n", config.app,
                           config.machine, config.agent, config.seed, config.baselineLabel);
  std::cout << fmt::format("{:>4}  {:<12}  {:>9}  {}\n", "step", "status", "score", "rationale");
  size_t shown = 0;
  for (size_t i = 0; i < o.steps.size(); ++i) {
    const auto &s = o.steps[i];
    if (shown++ == 25) {
      std::cout << fmt::format("  ... {} more steps: hone show {} --trajectory --db {}\n", o.steps.size() - 25,
                               report.runId, db);
      break;
    }
    std::string rationale = s.candidate.rationale.substr(0, 100);
    if (s.candidate.rationale.size() > 100)
      rationale += "...";
    std::string status(engine::toString(s.result.status));
    std::cout << fmt::format("{:>4}  {:<12}  {:>9}  {}{}\n", i, status,
                             s.result.ok() ? scoreText(s.result.score, config) : "-", rationale,
                             o.best && *o.best == i ? "  <- best" : "");
  }
  std::cout << "\n";
  if (o.best)
    std::cout << fmt::format("best: {} (step {}), written to {}\n", scoreText(o.progress.bestScore, config), *o.best,
                             report.bestFile.empty() ? "(not written)" : report.bestFile);
  else
    std::cout << "best: none -- every candidate failed (hone show " << report.runId << " --trajectory)\n";
  std::cout << fmt::format("run {} in {}: {} evaluations, {} failed; {} ({:.1f} s)\n", report.runId, db,
                           o.progress.evaluations, o.progress.failures, o.stopReason, report.seconds);
  if (config.agent == "llm") {
    const auto &u = report.usage;
    std::cout << fmt::format("llm: {} ({}), {} calls, {} prompt + {} completion tokens, cost {:.4f}{}\n",
                             config.llm.client.model, config.llm.optimizer, u.calls, u.promptTokens,
                             u.completionTokens, u.cost, config.llm.client.replay ? " (replayed)" : "");
  }
}

} // namespace hone::cli
