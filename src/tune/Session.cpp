#include "tune/Session.h"

#include "autoguide/AutoGuide.h"
#include "llm/Client.h"
#include "support/Executor.h"
#include "support/FileUtil.h"
#include "support/Interrupt.h"
#include "support/JsonText.h"
#include "support/StringUtil.h"
#include "tune/Domain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include <unistd.h>

namespace hone::tune {

using nlohmann::json;

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
  r.evidence = s.result.evidence;
  r.seconds = s.result.seconds;
  r.feedback = s.feedback;
  r.notes = s.candidate.notes;
  if (r.notes.is_object()) { // the LLM agent's conversation: its tokens and cost, summable in SQL
    const json &usage = r.notes.value("usage", json::object());
    r.promptTokens = usage.value("prompt_tokens", int64_t{0});
    r.completionTokens = usage.value("completion_tokens", int64_t{0});
    r.cost = support::numberOf(r.notes, "cost");
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
  s.result.evidence = r.evidence;
  s.result.seconds = r.seconds;
  s.feedback = r.feedback;
  return s;
}

std::string scoreText(double score, const TuneConfig &c) { return store::scoreText(score, c.baseline); }

std::string besideStore(const std::string &db, const std::string &name) {
  std::filesystem::path p(db);
  // `name` may carry a project's name: one component, so that it cannot leave the store's folder.
  return (p.parent_path() / support::pathComponent(p.stem().string() + "-" + name)).string();
}

namespace {

// A link (or a device, a FIFO) anywhere below an existing folder `dir`, which hone never writes: a
// best written through `best.json -> ../victim` would overwrite a file outside the folder.
std::optional<std::string> plantedEntry(const std::filesystem::path &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    fs::file_status st = it->symlink_status(ec);
    if (!ec && !fs::is_regular_file(st) && !fs::is_directory(st))
      return fmt::format("{} holds {}, which hone did not write ({}); remove it or choose another folder",
                         dir.string(), it->path().string(), fs::is_symlink(st) ? "a link" : "not a file");
  }
  return std::nullopt;
}

// Why `path` cannot take the best, or nullopt: its folder must exist (it is created) and be
// writable, and a file already there must be a regular file or a folder without links below it.
std::optional<std::string> checkOutput(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st))
    return fmt::format("{} exists and is neither a file nor a folder", path);
  if (fs::is_directory(st))
    if (auto planted = plantedEntry(p))
      return planted;
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  fs::create_directories(dir, ec);
  if (ec)
    return fmt::format("cannot create the folder {}: {}", dir.string(), ec.message());
  if (::access(dir.c_str(), W_OK) != 0)
    return fmt::format("the folder {} is not writable", dir.string());
  return std::nullopt;
}

store::RunUsage usageOf(const llm::Client &client) {
  auto t = client.totals();
  return {t.promptTokens, t.completionTokens, client.cost(), client.calls()};
}

/// Records each step in its own transaction, and what the LLM has cost so far; the first
/// failure to record is kept, and the run stops on it.
class StoreRecorder final : public engine::Recorder {
public:
  StoreRecorder(store::Store &store, int64_t run, int64_t next, const llm::Client *client)
      : store_(store), run_(run), next_(next), client_(client) {}
  void record(const engine::Step &step) override {
    auto ok = store_.recordStep(run_, toRecord(step, next_));
    if (ok && client_)
      ok = store_.setRunUsage(run_, usageOf(*client_));
    if (!ok && failure_.empty())
      failure_ = fmt::format("cannot record step {}: {}", next_, ok.error().message);
    ++next_;
  }
  /// Why a step could not be recorded ("" while every step was): the run stops then.
  const std::string &failure() const { return failure_; }

private:
  store::Store &store_;
  int64_t run_;
  int64_t next_;
  const llm::Client *client_;
  std::string failure_;
};

} // namespace

/// The executor of `config.executor` (null: local), made by its registered kind, which completes the
/// stored options with what a resume needs (a Slurm run's job tag).
support::Expected<std::shared_ptr<support::CommandExecutor>> makeExecutor(TuneConfig &config, const std::string &db) {
  if (config.executor == "local")
    return std::shared_ptr<support::CommandExecutor>();
  const support::ExecutorKind *kind = support::executorKind(config.executor);
  if (!kind)
    return support::Error{fmt::format("--executor: '{}' is not one of {}", config.executor,
                                      fmt::join(support::executorNames(), ", "))};
  return kind->make(config.executorOptions, besideStore(db, "jobs"));
}

namespace {

using WarnFn = std::function<void(const std::string &)>;

/// The model's client of an agent that asks one; `cache`: where its replies are kept.
support::Expected<std::unique_ptr<llm::Client>> makeClient(const TuneConfig &config, const SessionOptions &so,
                                                           const WarnFn &warn, std::string &cache) {
  llm::Settings settings = config.llm.client;
  // Every run can be resumed and replayed from its own store (the one given now: the stored
  // configuration keeps the cache empty unless the user named one).
  if (settings.cachePath.empty())
    settings.cachePath = so.db;
  settings.seed = config.seed;
  auto resolved = llm::resolve(settings, [](const char *name) { return std::getenv(name); });
  if (!resolved)
    return resolved.error();
  for (const auto &w : resolved->warnings)
    warn(w);
  auto made = llm::Client::make(resolved->client);
  if (!made)
    return made.error();
  (*made)->setWarningHandler(warn);
  cache = settings.cachePath;
  return std::move(*made);
}

/// Measures the reference that scores 1.0 (once: the baseline is stored with the run's configuration);
/// its result by its hash when it is a measurement, so that step 0 does not measure it again.
support::Expected<std::optional<std::pair<std::string, engine::EvalResult>>>
measureReference(Problem &problem, TuneConfig &config, store::Store &store, int64_t runId, const std::string &db) {
  auto [reference, referenceLabel] = problem.reference();
  engine::EvalResult ref = problem.evaluate(engine::Candidate::make(reference));
  if (support::interrupted()) { // not a measurement: the resume measures it
    (void)store.setRunStatus(runId, "interrupted");
    return support::Error{fmt::format("interrupted while measuring the reference; hone resume {} --db {} "
                                      "continues the run",
                                      runId, db)};
  }
  double measured = ref.ok() ? problem.baselineOf(ref) : 0;
  if (measured <= 0 && problem.referenceMustRun()) {
    (void)store.setRunStatus(runId, "failed");
    return support::Error{fmt::format("{} fails ({}), so no candidate can be compared with it: fix the build and "
                                      "run commands or the metric first (run {} is kept, failed)",
                                      referenceLabel, ref.error.empty() ? "no result" : ref.error, runId)};
  }
  std::optional<std::pair<std::string, engine::EvalResult>> result;
  if (ref.ok() && measured > 0) // step 0 is usually the reference: its measurement is not taken twice
    result = std::make_pair(engine::contentHash(reference), ref);
  if (measured > 0) {
    config.baseline = measured;
    config.baselineLabel = referenceLabel;
  } else {
    config.baselineLabel = fmt::format("raw {} ({} failed: {})", problem.baselineMetricName(), referenceLabel,
                                       ref.error.empty() ? "no result" : ref.error);
  }
  if (auto saved = store.setRunConfig(runId, config.toJson()); !saved)
    return support::Error{fmt::format("--db {}: {}", db, saved.error().message)};
  return result;
}

/// The loop's budget, batch and stop conditions; a step that cannot be recorded stops the run (going on
/// would compute what nobody keeps).
engine::LoopOptions loopOptions(const TuneConfig &config, const SessionOptions &so, const StoreRecorder &recorder) {
  engine::LoopOptions options;
  options.budget = config.iterations;
  options.batch = std::max<size_t>(1, config.jobs);
  if (config.wallTimeS > 0)
    options.stop = options.stop | engine::StopCondition::wallTime(config.wallTimeS);
  if (config.patience > 0)
    options.stop = options.stop | engine::StopCondition::noImprovement(config.patience);
  if (config.target)
    options.stop = options.stop | engine::StopCondition::target(*config.target);
  options.stop = options.stop | engine::StopCondition([&recorder](const engine::Progress &) {
                   return recorder.failure().empty() ? std::nullopt : std::optional<std::string>(recorder.failure());
                 });
  options.onStep = so.onStep;
  options.interrupted = support::interrupted;
  return options;
}

/// The run's store, opened (its folder made), once the best's file is known to be writable: both before
/// hours are spent on the run.
support::Expected<std::unique_ptr<store::Store>> openOutputs(const SessionOptions &so) {
  if (!so.bestFile.empty())
    if (auto bad = checkOutput(so.bestFile))
      return support::Error{"--out: " + *bad};
  if (auto dir = std::filesystem::path(so.db).parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return support::Error{fmt::format("--db {}: cannot create the folder {}: {}", so.db, dir.string(), ec.message())};
  }
  auto st = store::Store::open(so.db);
  if (!st)
    return support::Error{fmt::format("--db {}: {}", so.db, st.error().message)};
  return std::move(*st);
}

/// A new run's row: what was tuned, where, by which agent, and its configuration.
store::RunInfo runInfo(const Domain &domain, const TuneConfig &config, const TuneReport &report) {
  store::RunInfo info;
  info.domain = domain.name();
  info.app = report.subject;
  info.machine = report.machine;
  info.agent = config.agent;
  info.seed = config.seed;
  info.config = config.toJson();
  return info;
}

/// Writes the run's best where the user asked (or beside the store); a failure is a warning.
void writeBestOf(const Problem &problem, const TuneConfig &config, const SessionOptions &so, TuneReport &report,
                 const WarnFn &warn) {
  const engine::Step &best = report.outcome.steps[*report.outcome.best];
  report.bestText = best.candidate.artifact;
  report.bestFile = so.bestFile.empty() ? besideStore(so.db, problem.defaultBestName(report.runId)) : so.bestFile;
  std::string header = fmt::format("hone tune: best of run {} ({}, {} agent, score {} relative to {})", report.runId,
                                   report.subject, config.agent, scoreText(report.outcome.progress.bestScore, config),
                                   config.baselineLabel);
  // Checked again: a link may have been planted while the run went on.
  auto planted = checkOutput(report.bestFile);
  auto written = planted ? support::Expected<std::string>(support::Error{*planted})
                         : problem.writeBest(best, report.bestFile, header);
  if (!written) {
    warn(fmt::format("cannot write {}: {}", report.bestFile, written.error().message));
    report.bestFile.clear();
  } else {
    report.bestFile = *written;
    report.bestNote = problem.bestNote();
  }
}

} // namespace

support::Expected<TuneReport> runTune(TuneConfig &config, const SessionOptions &so) {
  auto t0 = std::chrono::steady_clock::now();
  auto warn = [&](const std::string &w) {
    if (so.warn)
      so.warn(w);
  };
  Registry &registry = Registry::instance();
  const Domain *domain = registry.domain(config.domain);
  if (!domain)
    return support::Error{fmt::format("unknown domain '{}' (hone knows {})", config.domain,
                                      fmt::join(registry.domainNames(), ", "))};
  auto level = autoguide::parseFeedbackLevel(config.feedback);
  if (!level)
    return support::Error{
        fmt::format("--feedback: '{}' is not one of exec, exec+explain, exec+explain+suggest", config.feedback)};
  if (config.agent.empty()) // the user named none: the domain's default, recorded with the run
    config.agent = registry.defaultAgent(config.domain);
  const AgentInfo *agentInfo = registry.agent(config.domain, config.agent);
  if (!agentInfo) {
    std::vector<std::string> names;
    for (const AgentInfo *a : registry.agents(config.domain))
      names.push_back(a->name);
    return support::Error{fmt::format("--agent: '{}' is not one of {}", config.agent, fmt::join(names, ", "))};
  }
  // What the run is stored with: whether its agent asks a model, and how reports name its candidates.
  config.llm.used = agentInfo->asksModel;
  config.presentation = {{"artifact", domain->artifactName()}, {"score", domain->scoreName()}};
  // The LLM's client first: a missing model or key is a usage error before anything runs.
  std::unique_ptr<llm::Client> client;
  std::string llmCache;
  if (agentInfo->asksModel) {
    auto made = makeClient(config, so, warn, llmCache);
    if (!made)
      return made.error();
    client = std::move(*made);
  }
  auto guide = autoguide::AutoGuide::withDefaults(config.rules);
  if (!guide)
    return guide.error();
  auto executor = makeExecutor(config, so.db);
  if (!executor)
    return executor.error();
  config.commandExecutor = *executor;
  auto opened = domain->open(config);
  if (!opened)
    return opened.error();
  Problem &problem = **opened;

  auto st = openOutputs(so);
  if (!st)
    return st.error();
  store::Store &store = **st;
  std::vector<engine::Step> history;
  TuneReport report;
  report.llmCache = llmCache;
  report.subject = problem.subject();
  report.machine = problem.machine();

  if (!so.resumeRun && config.start.empty()) {
    auto [text, label] = problem.defaultStart();
    config.start = text;
    config.startLabel = label;
  }
  // The agent before anything is evaluated or recorded: its settings are usage errors.
  AgentContext context{config, config.start, config.startLabel, client.get()};
  auto made = agentInfo->make(problem, context);
  if (!made)
    return made.error();
  auto agent = problem.decorateAgent(std::move(*made), context);
  if (!agent)
    return agent.error();

  // The run exists before anything is evaluated, so a run killed while the reference is measured
  // can be resumed (its baseline is measured then).
  if (!so.resumeRun) {
    auto id = store.createRun(runInfo(*domain, config, report));
    if (!id)
      return support::Error{fmt::format("--db {}: {}", so.db, id.error().message)};
    report.runId = *id;
  } else {
    report.runId = *so.resumeRun;
  }
  // One process runs a run at a time: a second resume (or a resume of a run still being tuned) is
  // refused with the holder's pid before it computes anything twice.
  if (auto locked = store.lockRun(report.runId); !locked)
    return support::Error{fmt::format("--db {}: {}", so.db, locked.error().message)};
  struct Unlock {
    store::Store &store;
    int64_t run;
    ~Unlock() { (void)store.unlockRun(run); }
  } unlock{store, report.runId};
  if (so.resumeRun) {
    for (const auto &r : store.steps(*so.resumeRun)) {
      if (!r.evidenceProblem.empty() && so.warn) // the agents read that step as not profiled
        so.warn(r.evidenceProblem + "; the agents read what could not be read as absent");
      history.push_back(fromRecord(r));
    }
    (void)store.setRunStatus(*so.resumeRun, "running");
  }
  std::optional<std::pair<std::string, engine::EvalResult>> referenceResult; // hash, result
  if (config.baselineLabel.empty()) { // not measured yet: a new run, or one killed while measuring it
    auto measured = measureReference(problem, config, store, report.runId, so.db);
    if (!measured)
      return measured.error();
    referenceResult = std::move(*measured);
  }
  problem.setBaseline(config.baseline);

  std::string domainName = domain->name();
  engine::FeedbackFn feedback = [&](const engine::Candidate &, const engine::EvalResult &r) {
    return guide->feedback(r.rawOutput, r.evidence, r.profile, domainName, *level);
  };
  if (referenceResult) { // scored as every later result is: relative to the baseline it set
    referenceResult->second.score = config.baseline > 0 ? 1.0 : referenceResult->second.score;
    referenceResult->second.seconds = 0;
  }
  engine::PoolEvaluator pool(
      [&](const engine::Candidate &c) {
        if (referenceResult && c.hash == referenceResult->first)
          return referenceResult->second;
        return problem.evaluate(c);
      },
      config.jobs);
  StoreRecorder recorder(store, report.runId, static_cast<int64_t>(history.size()), client.get());
  report.outcome = engine::runLoop(**agent, pool, feedback, &recorder, loopOptions(config, so, recorder), history);
  if (!recorder.failure().empty()) {
    (void)store.setRunStatus(report.runId, "failed");
    return support::Error{fmt::format("--db {}: {}; the run stopped (hone resume {} continues it once the store "
                                      "can be written)",
                                      so.db, recorder.failure(), report.runId)};
  }
  if (*executor)
    report.executor = (*executor)->activity().empty()
                          ? (*executor)->describe()
                          : fmt::format("{}: {}", (*executor)->describe(), (*executor)->activity());
  // An interrupted run is not finished: hone resume continues it (the batch in flight is evaluated again).
  (void)store.setRunStatus(report.runId, report.outcome.interrupted ? "interrupted" : "finished");
  if (client) {
    report.usage = usageOf(*client);
    (void)store.setRunUsage(report.runId, report.usage);
  }

  if (report.outcome.best)
    writeBestOf(problem, config, so, report, warn);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

json evidenceAlignment(const std::vector<engine::Step> &steps) {
  int64_t aligned = 0, claimed = 0;
  std::set<std::string> counted; // a repeated candidate counts once
  for (const auto &s : steps) {
    const json &n = s.candidate.notes;
    if (!n.is_object() || !n.contains("alignment") || !n["alignment"].is_object() ||
        !n["alignment"].contains("aligned") || !n["alignment"]["aligned"].is_boolean() ||
        !counted.insert(s.candidate.hash).second)
      continue;
    ++claimed;
    aligned += n["alignment"]["aligned"].get<bool>() ? 1 : 0;
  }
  if (claimed == 0)
    return nullptr;
  return {{"aligned", aligned}, {"claimed", claimed}, {"rate", static_cast<double>(aligned) / claimed}};
}

json reportJson(const TuneReport &report, const TuneConfig &config) {
  const auto &o = report.outcome;
  json j{{"run_id", report.runId},
         {"domain", config.domain},
         {"app", report.subject},
         {"machine", report.machine},
         {"agent", config.agent},
         {"seed", config.seed},
         {"evaluations", o.progress.evaluations},
         {"failures", o.progress.failures},
         {"best_score", o.best ? o.progress.bestScore : 0.0},
         {"best_file", report.bestFile.empty() ? json() : json(report.bestFile)},
         {"best_note", report.bestNote},
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
  if (config.llm.used)
    j["llm"] = {{"model", config.llm.client.model}, {"optimizer", config.llm.optimizer},
                {"mode", config.llm.mode},        {"feedback", config.feedback},
                {"cache", report.llmCache},       {"replay", config.llm.client.replay}};
  if (json a = evidenceAlignment(o.steps); !a.is_null())
    j["evidence_alignment"] = a;
  if (!report.executor.empty())
    j["executor"] = report.executor;
  return j;
}

void printReport(std::ostream &out, const TuneReport &report, const TuneConfig &config, const std::string &db) {
  const auto &o = report.outcome;
  // The subject, the labels and the rationales come from files, agents and models: escaped.
  out << fmt::format("hone tune: {} on {}, {} agent, seed {}; scores relative to {}\n\n",
                     support::printable(report.subject), report.machine, config.agent, config.seed,
                     support::printable(config.baselineLabel));
  out << fmt::format("{:>4}  {:<12}  {:>9}  {}\n", "step", "status", "score", "rationale");
  auto row = [&](size_t i) {
    const auto &s = o.steps[i];
    std::string rationale = support::printable(s.candidate.rationale.substr(0, 100));
    if (s.candidate.rationale.size() > 100)
      rationale += "...";
    std::string status(engine::toString(s.result.status));
    out << fmt::format("{:>4}  {:<12}  {:>9}  {}{}\n", i, status, s.result.ok() ? scoreText(s.result.score, config) : "-",
                       rationale, o.best && *o.best == i ? "  <- best" : "");
  };
  constexpr size_t kShown = 25; // the first steps, then the best wherever it is
  for (size_t i = 0; i < o.steps.size() && i < kShown; ++i)
    row(i);
  if (o.steps.size() > kShown) {
    bool bestLater = o.best && *o.best >= kShown;
    out << fmt::format("  ... {} more steps{}: hone show {} --trajectory --db {}\n",
                       o.steps.size() - kShown - (bestLater ? 1 : 0), bestLater ? " besides the best" : "",
                       report.runId, db);
    if (bestLater)
      row(*o.best);
  }
  out << "\n";
  if (o.best) {
    out << fmt::format("best: {} (step {}), written to {}\n", scoreText(o.progress.bestScore, config), *o.best,
                       report.bestFile.empty() ? "(not written)" : report.bestFile);
    if (!report.bestNote.empty())
      out << report.bestNote << "\n";
  } else {
    out << "best: none -- every candidate failed (hone show " << report.runId << " --trajectory)\n";
  }
  out << fmt::format("run {} in {}: {} evaluations, {} failed; {} ({:.1f} s)\n", report.runId, db,
                     o.progress.evaluations, o.progress.failures, o.stopReason, report.seconds);
  if (config.llm.used) {
    const auto &u = report.usage;
    out << fmt::format("llm: {} ({}), {} calls, {} prompt + {} completion tokens, cost {:.4f}{}\n",
                       config.llm.client.model, config.llm.optimizer, u.calls, u.promptTokens, u.completionTokens,
                       u.cost, config.llm.client.replay ? " (replayed)" : "");
  }
  if (!report.executor.empty())
    out << "executor: " << report.executor << "\n";
  if (json a = evidenceAlignment(o.steps); !a.is_null())
    out << fmt::format("evidence alignment: {} of {} candidates that named a diagnostic changed the code it points "
                       "at ({:.0f}%)\n",
                       a["aligned"].get<int64_t>(), a["claimed"].get<int64_t>(), 100 * a["rate"].get<double>());
}

} // namespace hone::tune
