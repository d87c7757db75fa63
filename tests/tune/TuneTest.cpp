// The tune module: the run's configuration (round trip, version 1, strict
// keys), the registry (domains, agents, help), and a whole session on a toy
// domain registered here -- which is what a third domain would do.
#include "tune/Config.h"
#include "tune/Domain.h"
#include "tune/SearchAgents.h"
#include "tune/Session.h"
#include "tune/TuneFlags.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "report/Html.h"
#include "report/RunView.h"
#include "store/Store.h"
#include "support/Executor.h"
#include "support/FileUtil.h"
#include "support/Sqlite.h"

using namespace hone::tune;
using nlohmann::json;

TEST(TuneConfig, RoundTrip) {
  TuneConfig c;
  c.domain = "kernel";
  c.options = {{"project", "/p"}};
  c.agent = "ensemble";
  c.iterations = 42;
  c.seed = 7;
  c.start = "x";
  c.target = 1.5;
  c.baseline = 0.25;
  c.baselineLabel = "the reference";
  auto back = TuneConfig::fromJson(c.toJson());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->toJson(), c.toJson());
  EXPECT_EQ(back->domain, "kernel");
  EXPECT_EQ(back->options["project"], "/p");
  EXPECT_EQ(*back->target, 1.5);
  EXPECT_FALSE(c.toJson().contains("llm")); // an agent that asks no model: no model settings kept
  c.agent = "llm";
  c.llm.used = true; // the session sets it from the agent's registration
  c.llm.client.model = "m";
  c.llm.optimizer = "opro";
  c.presentation = {{"artifact", "variant"}, {"score", "speedup"}};
  back = TuneConfig::fromJson(c.toJson());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->llm.used);
  EXPECT_EQ(back->llm.optimizer, "opro");
  EXPECT_EQ(back->llm.client.model, "m");
  EXPECT_EQ(back->presentation["artifact"], "variant");
  EXPECT_EQ(back->toJson(), c.toJson());
  // Where commands ran is kept (a resume submits the same way and finds the run's jobs); local is the
  // default and is not written.
  EXPECT_FALSE(c.toJson().contains("executor"));
  c.executor = "slurm";
  c.executorOptions = {{"partition", "gpu"}, {"run_tag", "h-1-2"}};
  back = TuneConfig::fromJson(c.toJson());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->executor, "slurm");
  EXPECT_EQ(back->executorOptions["run_tag"], "h-1-2");
  json broken = c.toJson();
  broken["executor_options"] = "gpu";
  EXPECT_FALSE(TuneConfig::fromJson(broken));
}

TEST(TuneConfig, VersionOneIsTheMappingDomain) {
  json v1{{"app", "circuit"}, {"machine", "p100x4"}, {"agent", "guided"}, {"iterations", 10}, {"seed", 1},
          {"noise", 0.0},     {"evaluator", "model"}, {"baseline", 2.0}};
  auto c = TuneConfig::fromJson(v1);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->domain, "mapping");
  EXPECT_EQ(c->options["app"], "circuit");
  EXPECT_EQ(c->options["evaluator"], "model");
  EXPECT_EQ(c->baseline, 2.0);
}

TEST(TuneConfig, StrictAndVersioned) {
  TuneConfig c;
  json j = c.toJson();
  j["iteratons"] = 5;
  auto bad = TuneConfig::fromJson(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown key 'iteratons'; did you mean 'iterations'?"), std::string::npos)
      << bad.error().message;
  j = c.toJson();
  j["config_version"] = kConfigVersion + 1;
  EXPECT_NE(TuneConfig::fromJson(j).error().message.find("newer hone"), std::string::npos);
  EXPECT_FALSE(TuneConfig::fromJson(json::array()));
  j = c.toJson();
  j["iterations"] = "ten";
  EXPECT_FALSE(TuneConfig::fromJson(j));
  // Numbers that do not fit what they are read as (found by the config fuzzer: undefined behaviour).
  for (json bad : {json(2.8888e31), json(-1), json(2.5), json(1e300)}) {
    j = c.toJson();
    j["config_version"] = bad;
    auto r = TuneConfig::fromJson(j);
    ASSERT_FALSE(r) << bad;
    j = c.toJson();
    j["iterations"] = bad;
    r = TuneConfig::fromJson(j);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("'iterations' is"), std::string::npos) << r.error().message;
  }
}

// ---- a toy domain: a number to guess -----------------------------------------------

namespace {

class Digits final : public CategoricalSpace {
public:
  std::vector<size_t> sizes() const override { return {10, 10}; }
  std::string render(const std::vector<int> &a) const override { return std::to_string(a[0] * 10 + a[1]); }
};

/// Set by a test: the next evaluation of the reference ("0") ends the process, as kill -9 would.
bool gDieOnReference = false;

class Guess final : public Problem {
public:
  explicit Guess(int target = 42) : target_(target) {}
  std::string subject() const override { return "guess"; }
  std::string machine() const override { return "toy"; }
  hone::engine::EvalResult evaluate(const hone::engine::Candidate &c) override {
    hone::engine::EvalResult r;
    int x = std::atoi(c.artifact.c_str());
    if (x == 0 && gDieOnReference)
      std::_Exit(137);
    if (x == 13) {
      r.status = hone::engine::EvalStatus::Invalid;
      r.error = "unlucky";
      return r;
    }
    double value = 100.0 - std::abs(x - target_);
    r.metrics["value"] = value;
    r.score = baseline_ > 0 ? value / baseline_ : value;
    return r;
  }
  std::pair<std::string, std::string> reference() const override { return {"0", "zero"}; }
  double baselineOf(const hone::engine::EvalResult &r) const override { return r.metrics.at("value"); }
  std::string baselineMetricName() const override { return "value"; }
  void setBaseline(double b) override { baseline_ = b; }
  std::pair<std::string, std::string> defaultStart() const override { return {"0", "zero"}; }
  const CategoricalSpace *space() const override { return &digits_; }
  hone::support::Expected<std::string> writeBest(const hone::engine::Step &, const std::string &path,
                                                 const std::string &) const override {
    return path;
  }
  std::string defaultBestName(int64_t id) const override { return "best-" + std::to_string(id); }

private:
  Digits digits_;
  double baseline_ = 0;
  int target_;
};

/// The toy domain's flags of `hone tune`: --guess chooses it, --guess-target sets the number.
class GuessFlags final : public DomainFlags {
public:
  explicit GuessFlags(CLI::App &cmd) {
    chooser_ = cmd.add_flag("--guess", chosen_, "Guess a number");
    target_ = cmd.add_option("--guess-target", target, "The number to guess");
  }
  bool chosen() const override { return chooser_->count() > 0; }
  json options() const override { return target_->count() > 0 ? json{{"target", target}} : json::object(); }
  std::vector<std::string> unread(bool chosen) const override {
    if (!chosen && target_->count() > 0)
      return {"--guess-target has no effect without --guess"};
    return {};
  }
  int target = 42;

private:
  bool chosen_ = false;
  CLI::Option *chooser_ = nullptr, *target_ = nullptr;
};

class GuessDomain final : public Domain {
public:
  std::string name() const override { return "guess"; }
  std::string artifactName() const override { return "guess"; }
  std::string scoreName() const override { return "closeness"; }
  hone::support::Expected<std::unique_ptr<Problem>> open(TuneConfig &config) const override {
    JsonReader r(config.options, "guess options");
    int target = 42;
    try {
      target = r.get<int>("target", 42);
      r.finish();
    } catch (const std::exception &e) {
      return hone::support::Error{e.what()};
    }
    return std::unique_ptr<Problem>(std::make_unique<Guess>(target));
  }
  hone::support::Expected<std::optional<std::string>> checkStart(const TuneConfig &, const std::string &text,
                                                                 const std::string &label) const override {
    if (text.find_first_not_of("0123456789") == std::string::npos && !text.empty())
      return std::optional<std::string>();
    return std::optional<std::string>(label + ": not a number\n");
  }
  std::string chooser() const override { return "--guess (a number to guess)"; }
  std::unique_ptr<DomainFlags> addTuneFlags(CLI::App &cmd, const CommonFlags &) const override {
    return std::make_unique<GuessFlags>(cmd);
  }
};

struct TempDb {
  std::string path = (std::filesystem::temp_directory_path() / ("hone-tune-" + std::to_string(getpid()) + ".db")).string();
  ~TempDb() {
    for (const char *suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  }
};

/// A run of the toy domain with `agent` for `iterations` evaluations.
TuneConfig guessRun(const std::string &agent, size_t iterations) {
  TuneConfig c;
  c.domain = "guess";
  c.agent = agent;
  c.iterations = iterations;
  return c;
}

void registerGuess() {
  Registry &r = Registry::instance();
  r.addDomain(std::make_unique<GuessDomain>());
  registerSearchAgents(r);
}

} // namespace

TEST(Registry, DomainsAndAgentsByName) {
  registerGuess();
  Registry &r = Registry::instance();
  ASSERT_TRUE(r.domain("guess"));
  EXPECT_FALSE(r.domain("nonesuch"));
  EXPECT_TRUE(r.agent("guess", "random"));
  EXPECT_TRUE(r.agent("guess", "ensemble"));
  EXPECT_FALSE(r.agent("guess", "guided")); // no domain-specific agent was registered for it
  EXPECT_NE(r.agentHelp("guess").find("random:"), std::string::npos);
  TuneConfig c;
  auto fine = r.domain("guess")->checkStart(c, "42", "start.txt");
  ASSERT_TRUE(fine);
  EXPECT_FALSE(*fine);
  auto bad = r.domain("guess")->checkStart(c, "forty-two", "start.txt");
  ASSERT_TRUE(bad);
  ASSERT_TRUE(*bad);
  EXPECT_EQ(**bad, "start.txt: not a number\n");
}

TEST(TuneFlags, ADomainRegisteredAnywhereIsOnTheCommandLineWithItsOwnFlags) {
  registerGuess();
  auto parse = [](std::vector<std::string> args, TuneConfig &config, std::vector<std::string> &warnings) {
    CLI::App cmd("tune");
    TuneFlags flags(cmd, Registry::instance());
    std::reverse(args.begin(), args.end()); // CLI11 takes them last first
    cmd.parse(args);
    return flags.apply(config, warnings);
  };
  TuneConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(parse({"--guess", "--guess-target", "7", "--workdir", "/w"}, c, warnings));
  EXPECT_EQ(c.domain, "guess");
  EXPECT_EQ(c.options, json({{"target", 7}}));
  EXPECT_TRUE(warnings.empty());
  // The run it starts reads the option: the reference "0" is 7 away from the target.
  TempDb db;
  c.iterations = 3;
  SessionOptions so;
  so.db = db.path;
  auto report = runTune(c, so);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(c.baseline, 93);
  EXPECT_EQ(c.agent, Registry::instance().defaultAgent("guess")) << "no --agent: the domain's default";
  // No chooser: the error names every domain's; a flag of a domain not chosen is said, not dropped.
  TuneConfig none;
  auto missing = parse({"--guess-target", "7"}, none, warnings);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("tune needs "), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("--guess (a number to guess)"), std::string::npos)
      << missing.error().message;
}

TEST(Session, ARunOnAToyDomainIsRecordedAndResumes) {
  registerGuess();
  TempDb db;
  TuneConfig c;
  c.domain = "guess";
  c.agent = "ensemble";
  c.iterations = 30;
  c.seed = 3;
  SessionOptions so;
  so.db = db.path;
  auto report = runTune(c, so);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->outcome.progress.evaluations, 30u);
  EXPECT_EQ(c.baseline, 58); // the reference "0" scores 100 - 42
  EXPECT_GT(report->outcome.progress.bestScore, 1.0);
  // The default best goes beside the store, after its name.
  std::filesystem::path dbPath(db.path);
  EXPECT_EQ(report->bestFile,
            (dbPath.parent_path() / (dbPath.stem().string() + "-best-" + std::to_string(report->runId))).string());
  auto store = hone::store::Store::open(db.path);
  ASSERT_TRUE(store);
  auto run = (*store)->run(report->runId);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->domain, "guess");
  EXPECT_EQ(run->app, "guess");
  EXPECT_EQ((*store)->steps(report->runId).size(), 30u);
  // Resuming a finished run with a bigger budget continues from what the store holds.
  auto stored = TuneConfig::fromJson(run->config);
  ASSERT_TRUE(stored) << stored.error().message;
  stored->iterations = 40;
  so.resumeRun = report->runId;
  auto resumed = runTune(*stored, so);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->outcome.progress.evaluations, 40u);
  EXPECT_EQ((*store)->steps(report->runId).size(), 40u);
}

// What a third domain registers is all the rest of hone needs: reports name its candidates and scores in
// its own words (kept with the run), and an agent that says it asks a model gets the session's model
// client -- whatever its name.
TEST(Session, AThirdDomainIsReportedInItsOwnWordsAndAgentsAreTakenAtTheirWord) {
  registerGuess();
  TempDb db;
  TuneConfig c = guessRun("random", 6);
  SessionOptions so;
  so.db = db.path;
  auto report = runTune(c, so);
  ASSERT_TRUE(report) << report.error().message;
  auto store = hone::store::Store::open(db.path);
  ASSERT_TRUE(store);
  auto run = (*store)->run(report->runId);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->artifactName(), "guess");
  EXPECT_EQ(run->scoreName(), "closeness");
  EXPECT_FALSE(run->config.contains("llm")); // random asks no model
  auto views = hone::report::loadRuns(**store, {report->runId});
  ASSERT_TRUE(views) << views.error().message;
  std::string html = hone::report::reportHtml(*views, {});
  EXPECT_NE(html.find("best closeness so far"), std::string::npos);
  EXPECT_NE(html.find("Closeness of the best guess"), std::string::npos);
  EXPECT_NE(html.find("the best guess"), std::string::npos);
  // A run stored before the words were kept reads with the words its domain used then (plain ones for a
  // domain hone did not have).
  hone::store::RunInfo old = *run;
  old.config.erase("presentation");
  EXPECT_EQ(old.artifactName(), "candidate");
  EXPECT_EQ(old.scoreName(), "score");
  old.domain = "kernel";
  EXPECT_EQ(old.artifactName(), "variant");
  // A word that is not plain text (a store edited by hand) is not printed.
  old.config["presentation"] = {{"artifact", "x\x1b]0;title\x07"}, {"score", std::string(41, 'a')}};
  EXPECT_EQ(old.artifactName(), "variant");
  EXPECT_EQ(old.scoreName(), "speedup");
  auto stored = TuneConfig::fromJson(run->config);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->presentation, run->config["presentation"]);
  // An agent registered under any name that asks a model gets the session's client, and its run keeps the
  // model's settings; without them, nothing runs.
  static bool gotClient = false;
  Registry::instance().addAgent({"oracle", "asks a model", {"guess"},
                                 [](Problem &p, const AgentContext &ctx)
                                     -> hone::support::Expected<std::unique_ptr<hone::engine::Strategy>> {
                                   gotClient = ctx.client != nullptr;
                                   return makeRandomAgent(*p.space(), 1);
                                 },
                                 /*asksModel=*/true});
  TempDb other;
  so.db = other.path + "-oracle";
  c.agent = "oracle";
  c.llm.client.url = "http://127.0.0.1:9/v1"; // never asked: the agent searches at random
  c.llm.client.model = "m";
  auto asked = runTune(c, so);
  ASSERT_TRUE(asked) << asked.error().message;
  EXPECT_TRUE(gotClient);
  auto oracleStore = hone::store::Store::open(so.db);
  ASSERT_TRUE(oracleStore);
  auto oracleRun = (*oracleStore)->run(asked->runId);
  ASSERT_TRUE(oracleRun);
  EXPECT_EQ(oracleRun->config["llm"]["model"], "m");
  oracleStore->reset();
  for (const char *suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(so.db + suffix);
  c.llm.client = {};
  c.llm.client.configFile = "/nonexistent/hone-llm.toml"; // no model from anywhere
  auto refused = runTune(c, so);
  ASSERT_FALSE(refused);
  EXPECT_FALSE(std::filesystem::exists(so.db)) << "nothing runs before the model's settings are checked";
}

// An executor other than the local one is a registered kind: the session makes it by name, keeps the
// options it completed (what a resume needs), and reports what it did, without knowing what it is.
TEST(Session, AnExecutorIsMadeByItsRegisteredKind) {
  registerGuess();
  struct Counting final : hone::support::CommandExecutor {
    int runs = 0;
    hone::support::SubprocessResult run(const hone::support::SubprocessOptions &o, const std::string &) override {
      ++runs;
      return hone::support::runSubprocess(o);
    }
    std::string describe() const override { return "counting"; }
    std::string activity() const override { return "3 things done"; }
  };
  hone::support::registerExecutorKind(
      {"counting", [](json &options, const std::string &beside)
                       -> hone::support::Expected<std::shared_ptr<hone::support::CommandExecutor>> {
         if (options.contains("refuse"))
           return hone::support::Error{"counting: refused"};
         options["folder"] = beside;
         return std::shared_ptr<hone::support::CommandExecutor>(std::make_shared<Counting>());
       }});
  TempDb db;
  TuneConfig c = guessRun("random", 2);
  c.executor = "counting";
  SessionOptions so;
  so.db = db.path;
  auto report = runTune(c, so);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->executor, "counting: 3 things done");
  EXPECT_NE(c.executorOptions["folder"].get<std::string>().find("jobs"), std::string::npos) << c.executorOptions;
  EXPECT_TRUE(c.toJson().contains("executor_options"));
  c.executorOptions = {{"refuse", true}};
  auto refused = runTune(c, so);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "counting: refused");
  c.executor = "carrier-pigeon";
  auto unknown = runTune(c, so);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'carrier-pigeon' is not one of local, "), std::string::npos)
      << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("counting"), std::string::npos) << unknown.error().message;
}

TEST(Session, UsageErrorsBeforeAnythingRuns) {
  registerGuess();
  TempDb db;
  SessionOptions so;
  so.db = db.path;
  TuneConfig c;
  c.domain = "guess";
  c.agent = "guided";
  auto r = runTune(c, so);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--agent: 'guided' is not one of"), std::string::npos) << r.error().message;
  c.agent = "random";
  c.feedback = "everything";
  EXPECT_NE(runTune(c, so).error().message.find("--feedback"), std::string::npos);
  c.feedback = "exec";
  c.domain = "nonesuch";
  EXPECT_NE(runTune(c, so).error().message.find("unknown domain 'nonesuch'"), std::string::npos);
  c.domain = "guess";
  c.options = {{"bogus", 1}};
  EXPECT_NE(runTune(c, so).error().message.find("unknown key 'bogus'"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(db.path)); // nothing was created for a run that never started
}

TEST(Session, AStepThatCannotBeRecordedStopsTheRun) {
  registerGuess();
  TempDb db;
  {
    auto st = hone::store::Store::open(db.path);
    ASSERT_TRUE(st);
    ASSERT_TRUE(hone::support::Database::open(db.path).value()->exec(
        "CREATE TRIGGER full AFTER INSERT ON evaluations WHEN (SELECT count(*) FROM evaluations) > 3 "
        "BEGIN SELECT RAISE(FAIL, 'disk full (simulated)'); END;"));
  }
  TuneConfig c;
  c.domain = "guess";
  c.agent = "random";
  c.iterations = 20;
  SessionOptions so;
  so.db = db.path;
  auto r = runTune(c, so);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot record step 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("disk full (simulated)"), std::string::npos);
  auto st = hone::store::Store::open(db.path);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)->run(1)->status, "failed");
  EXPECT_EQ((*st)->steps(1).size(), 3u); // what was recorded stays
}

TEST(Session, ARunKilledWhileMeasuringItsReferenceResumes) {
  registerGuess();
  TempDb db;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    gDieOnReference = true;
    TuneConfig c;
    c.domain = "guess";
    c.agent = "random";
    c.iterations = 5;
    SessionOptions so;
    so.db = db.path;
    (void)runTune(c, so);
    std::_Exit(0); // not reached: the reference's evaluation ends the process
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 137);
  auto st = hone::store::Store::open(db.path);
  ASSERT_TRUE(st);
  auto run = (*st)->run(1);
  ASSERT_TRUE(run) << "the run exists before its reference is measured";
  EXPECT_TRUE((*st)->steps(1).empty());
  auto stored = TuneConfig::fromJson(run->config);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->baseline, 0);
  SessionOptions so;
  so.db = db.path;
  so.resumeRun = 1;
  auto resumed = runTune(*stored, so);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(stored->baseline, 58); // measured on resume
  EXPECT_EQ(resumed->outcome.progress.evaluations, 5u);
  EXPECT_EQ(TuneConfig::fromJson((*st)->run(1)->config)->baseline, 58); // and saved
}

TEST(Session, ANameInTheBestsPathStaysOneComponentBesideTheStore) {
  // A project named "/../../ESCAPED" (or holding a newline) must not lead the best out of the store's
  // folder or into folders of its own.
  EXPECT_EQ(besideStore("/a/b/hone.db", "best-/../../ESCAPED-run1"), "/a/b/hone-best-_.._.._ESCAPED-run1");
  EXPECT_EQ(besideStore("/a/b/hone.db", "best-x\ny/z-run2"), "/a/b/hone-best-x_y_z-run2");
  EXPECT_EQ(besideStore("runs/x.db", "report.html"), "runs/x-report.html");
  EXPECT_EQ(hone::support::pathComponent(".."), "_..");
  EXPECT_EQ(hone::support::pathComponent(""), "_");
  EXPECT_EQ(hone::support::pathComponent("fine-name_1.2"), "fine-name_1.2");
}

TEST(Session, AnOutputFolderHoldingALinkIsRefusedBeforeTheRun) {
  // Links planted in --out (best.json -> ../victim/v.txt) would have the best written through them.
  registerGuess();
  TempDb db;
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("hone-out-links-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "out" / "sub");
  fs::create_directories(root / "victim");
  std::ofstream(root / "victim" / "v.txt") << "precious";
  fs::create_symlink(root / "victim" / "v.txt", root / "out" / "sub" / "best.json");
  TuneConfig c;
  c.domain = "guess";
  c.agent = "random";
  c.iterations = 2;
  SessionOptions so;
  so.db = db.path;
  so.bestFile = (root / "out").string();
  auto r = runTune(c, so);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--out: "), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("best.json, which hone did not write (a link)"), std::string::npos)
      << r.error().message;
  EXPECT_FALSE(fs::exists(db.path));
  fs::remove(root / "out" / "sub" / "best.json");
  EXPECT_TRUE(runTune(c, so)) << "the same folder without the link is fine";
  fs::remove_all(root);
}

TEST(Session, TheReportEscapesWhatAnAgentWrote) {
  // A model's rationale holding a window title and a screen clear reaches the terminal as text.
  TuneReport report;
  report.subject = "k\x1b[2J";
  report.machine = "toy";
  hone::engine::Step step;
  step.candidate = hone::engine::Candidate::make("1", {}, "faster\x1b]0;title\x07\x1b[2J");
  step.result.score = 1;
  report.outcome.steps.push_back(step);
  TuneConfig c;
  c.agent = "llm";
  c.llm.used = true;
  std::ostringstream out;
  printReport(out, report, c, "hone.db");
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("faster\\e]0;title\\x07\\e[2J"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("hone tune: k\\e[2J on toy"), std::string::npos) << out.str();
}

TEST(Session, TheReportSaysBestOrNoneNeverBoth) {
  TuneReport report;
  report.subject = "k";
  report.machine = "toy";
  hone::engine::Step step;
  step.candidate = hone::engine::Candidate::make("1", {}, "the start");
  step.result.score = 1.5;
  report.outcome.steps.push_back(step);
  report.outcome.best = 0;
  report.bestFile = "best.toml";
  TuneConfig c;
  auto text = [&] {
    std::ostringstream out;
    printReport(out, report, c, "hone.db");
    return out.str();
  };
  // A best with no note (a domain that has none, or a kernel run with --final-rounds 0).
  EXPECT_NE(text().find("best: "), std::string::npos) << text();
  EXPECT_EQ(text().find("every candidate failed"), std::string::npos) << text();
  report.bestNote = "side by side: 1.4x";
  EXPECT_NE(text().find("side by side: 1.4x"), std::string::npos) << text();
  report.outcome.best.reset();
  report.bestNote.clear();
  EXPECT_NE(text().find("best: none -- every candidate failed"), std::string::npos) << text();
}
