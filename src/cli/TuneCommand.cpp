// hone tune --app APP [--machine M] [--agent guided|ensemble|random|llm] [--iterations N] [--seed S]
//           [--start FILE] [--db PATH] [--jobs N] [--feedback LEVEL] [--rules FILE]... [--json]
//           [--llm-url URL --llm-model NAME --llm-preset P --optimizer trace|opro|K-shot
//            --llm-cache PATH --replay ...]   (docs/LLM.md)
// hone tune --kernel DIR [--agent guided|ensemble|random|llm [--llm-mode single|two-agent]] ...   (docs/KERNELS.md)
// hone tune ... --executor slurm [--slurm-partition P --slurm-gpus G --slurm-sbatch OPT ...]   (docs/SLURM.md)
// hone resume RUN [--db PATH] [--json]
// Parses flags into a tune::TuneConfig, runs tune::runTune, prints.
#include "cli/Commands.h"

#include "store/Store.h"
#include "support/FileUtil.h"
#include "support/Interrupt.h"
#include "tune/Domain.h"
#include "tune/Session.h"
#include "tune/TuneFlags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace hone::cli {

namespace {

using tune::TuneConfig;

/// Runs the session with the CLI's progress line and warnings, and prints the summary.
int runAndPrint(TuneConfig &config, const std::string &db, std::optional<int64_t> resume, const std::string &out,
                bool json) {
  tune::SessionOptions so;
  so.db = db;
  so.resumeRun = resume;
  so.bestFile = out;
  so.warn = [](const std::string &w) { std::cerr << "hone: warning: " << w << "\n"; };
  // Progress on stderr: one line rewritten in place on a terminal, one line per evaluation elsewhere
  // (a log, CI, nohup), with the time spent and, on the terminal, the time left at this pace.
  bool progress = !json && isatty(2);
  if (!json)
    so.onStep = [&config, progress](const engine::Step &s, const engine::Progress &p) {
      std::string status(engine::toString(s.result.status));
      std::string line = fmt::format("[{}/{}] best {} | last: {}{} | {:.0f} s", p.evaluations, config.iterations,
                                     p.evaluations > p.failures ? tune::scoreText(p.bestScore, config) : "-",
                                     status, s.result.ok() ? " " + tune::scoreText(s.result.score, config) : "",
                                     p.elapsedS);
      if (progress) {
        if (p.evaluations > 0 && p.evaluations < config.iterations)
          line += fmt::format(", about {:.0f} s left", p.elapsedS / static_cast<double>(p.evaluations) *
                                                          static_cast<double>(config.iterations - p.evaluations));
        std::cerr << "\r\033[K" << line << std::flush;
      } else {
        std::cerr << "hone: " << line << "\n";
      }
    };
  // Ctrl-C or kill: the command in flight is stopped, the run kept as "interrupted" with its best.
  support::installInterruptHandlers();
  auto report = tune::runTune(config, so);
  if (progress)
    std::cerr << "\r\033[K" << std::flush;
  int interruptedBy = support::interruptSignal();
  if (!report) {
    std::cerr << "hone: " << report.error().message << "\n";
    return interruptedBy ? 128 + interruptedBy : exitCodeOf(report.error());
  }
  if (json)
    std::cout << tune::reportJson(*report, config).dump(2) << "\n";
  else
    tune::printReport(std::cout, *report, config, db);
  if (report->outcome.interrupted) {
    std::cerr << fmt::format("hone: interrupted by {}; run {} is kept: hone resume {} --db {} continues it\n",
                             interruptedBy == SIGTERM ? "SIGTERM" : "SIGINT", report->runId, report->runId, db);
    return 128 + interruptedBy; // the shell's convention for a command ended by a signal
  }
  return kOk;
}

/// What `hone tune`'s flags say.
struct TuneOptions {
  TuneConfig config;
  std::unique_ptr<tune::TuneFlags> domains; // each domain's own flags (--app, --kernel, ...)
  std::string startFile, db = "hone.db", out;
  bool json = false;
  std::string refusedKey; // --api-key is refused; never printed
  ExecutorFlags executor;
};

/// The LLM agent's flags, in the group `llm`.
void addLlmFlags(CLI::App *cmd, tune::LlmConfig &l, const char *llm) {
  addLlmEndpointOptions(*cmd, l.client, llm);
  cmd->add_option("--optimizer", l.optimizer, "trace, opro, or K-shot (0-shot, 5-shot: no feedback)")
      ->capture_default_str()
      ->group(llm);
  cmd->add_option("--llm-mode", l.mode, "Kernels: single (one request chooses and writes) or two-agent (insight, "
                                        "then code)")
      ->capture_default_str()
      ->check(CLI::IsMember({"single", "two-agent"}))
      ->group(llm);
  cmd->add_option("--repairs", l.repairs,
                  "Times a candidate that does not check (a mapper's diagnostics, a kernel's compiler errors) goes "
                  "back to the model")
      ->capture_default_str()
      ->check(CLI::Range(0, 20))
      ->group(llm);
  cmd->add_option("--history", l.history, "opro: (mapper, score) pairs shown")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{50}))
      ->group(llm);
  cmd->add_option("--temperature", l.temperature, "Sampling temperature")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0))
      ->group(llm);
  cmd->add_option("--llm-max-tokens", l.maxTokens, "Tokens per reply at most (0: the server's default)")
      ->check(CLI::Range(0, 1000000))
      ->group(llm);
  cmd->add_option("--llm-prompt-budget", l.promptBudget,
                  "Bytes of a request's prompt at most (system and first user message); over it, the least needed "
                  "sections are shortened, as each request's notes say (0: the domain's default, 15000 for kernels)")
      ->check(CLI::Range(size_t{0}, size_t{10000000}))
      ->group(llm);
  cmd->add_option("--llm-cache", l.client.cachePath, "Response cache (SQLite); default: the store (--db)")->group(llm);
  cmd->add_flag("--replay", l.client.replay, "Answer only from the cache, never the network: rerun a run exactly")
      ->group(llm);
  cmd->add_option("--llm-concurrency", l.client.concurrency, "Requests in flight at most (a batch of --jobs asks at once)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64))
      ->group(llm);
  cmd->add_option("--token-budget", l.client.tokenBudget, "Stop asking after this many tokens (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->group(llm);
  cmd->add_option("--money-budget", l.client.moneyBudget, "Stop asking after this much money (needs prices)")
      ->check(CLI::NonNegativeNumber)
      ->group(llm);
  cmd->add_option("--price-prompt", l.client.pricePrompt, "Price per million prompt tokens")
      ->check(CLI::NonNegativeNumber)
      ->group(llm);
  cmd->add_option("--price-completion", l.client.priceCompletion, "Price per million completion tokens")
      ->check(CLI::NonNegativeNumber)
      ->group(llm);
  cmd->add_option("--prompts", l.promptDirs, "Folder with prompt templates that override prompts/mapping/*.md")
      ->group(llm);
}

/// Flags given that the chosen agent or evaluator does not read: a warning each.
void warnUnreadFlags(const TuneOptions &opts, const TuneConfig &config, CLI::App *cmd, const char *llm) {
  // What the run's agent does, as it registered (the domain's default when none was named).
  const tune::Registry &registry = tune::Registry::instance();
  std::string agent = config.agent.empty() ? registry.defaultAgent(config.domain) : config.agent;
  const tune::AgentInfo *info = registry.agent(config.domain, agent);
  bool known = info != nullptr, asksModel = info && info->asksModel, usesStart = info && info->usesStart;
  std::vector<std::string> modelAgents;
  for (const tune::AgentInfo *a : registry.agents(config.domain))
    if (a->asksModel)
      modelAgents.push_back(a->name);
  if (known && !asksModel)
    for (const CLI::Option *o : cmd->get_options([&](const CLI::Option *o) { return o->get_group() == llm; }))
      if (o->count() > 0)
        std::cerr << "hone: warning: " << o->get_name() << " has no effect without --agent "
                  << fmt::format("{}", fmt::join(modelAgents, " or --agent ")) << "\n";
  if (!opts.startFile.empty() && known && !usesStart)
    std::cerr << "hone: warning: --start has no effect with --agent " << agent
              << " (it searches the space from its default assignment)\n";
}

/// The run the flags describe, started.
int startTune(const TuneOptions &opts, CLI::App *cmd, const char *llm) {
  TuneConfig config = opts.config;
  std::vector<std::string> warnings;
  if (auto chosen = opts.domains->apply(config, warnings); !chosen) {
    std::cerr << "hone: " << chosen.error().message << "\n";
    return kUsage;
  }
  for (const std::string &w : warnings)
    std::cerr << "hone: warning: " << w << "\n";
  warnUnreadFlags(opts, config, cmd, llm);
  if (!applyExecutorOptions(opts.executor, config))
    return kUsage;
  if (!opts.startFile.empty()) {
    auto text = support::readFile(opts.startFile);
    if (!text) {
      std::cerr << "hone: --start: " << text.error().message << "\n";
      return kUsage;
    }
    std::error_code ec;
    if (!opts.out.empty() && std::filesystem::equivalent(opts.out, opts.startFile, ec)) {
      std::cerr << "hone: --out " << opts.out << " is the --start file; the best would overwrite it: choose "
                << "another --out\n";
      return kUsage;
    }
    if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
      std::cerr << "hone: --start " << opts.startFile << " is empty\n";
      return kUsage;
    }
    config.start = *text;
    config.startLabel = opts.startFile;
    // A start that does not check would make every edit of it fail: say so now, located.
    auto bad = tune::Registry::instance().domain(config.domain)->checkStart(config, config.start, opts.startFile);
    if (!bad) {
      std::cerr << "hone: " << bad.error().message << "\n";
      return kUsage;
    }
    if (*bad) {
      std::cerr << **bad << "hone: --start " << opts.startFile << " does not check; fix it first\n";
      return kRejected;
    }
  }
  return runAndPrint(config, opts.db, std::nullopt, opts.out, opts.json);
}

} // namespace

void addTuneCommand(CLI::App &app, Action &action) {
  auto opts = std::make_shared<TuneOptions>();
  TuneConfig &c = opts->config;
  auto *cmd = app.add_subcommand("tune", "Search for a faster mapper or kernel: propose, evaluate, explain, repeat");
  cmd->add_option("--agent", c.agent, tune::Registry::instance().agentHelp());
  cmd->add_option("--iterations", c.iterations, "Evaluations at most")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  cmd->add_option("--seed", c.seed, "Seed of the agent")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--start", opts->startFile,
                  "The mapper or kernel variant to start from (default: the app's expert mapper, the unmodified "
                  "project)");
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_option("--out", opts->out,
                  "Where to write the best mapper or variant (default: beside the store, named after the store, "
                  "the subject and the run)");
  cmd->add_option("--jobs", c.jobs, "Candidates evaluated in parallel")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{256}));
  cmd->add_option("--feedback", c.feedback, "What the agent sees: exec, exec+explain, exec+explain+suggest")
      ->capture_default_str();
  cmd->add_option("--rules", c.rules, "Extra AutoGuide rule files (TOML)");
  cmd->add_option("--time-limit", c.wallTimeS, "Stop after this many seconds")->check(CLI::PositiveNumber);
  cmd->add_option("--patience", c.patience, "Stop after this many evaluations without improvement")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--target", c.target, "Stop once the best score reaches this")->check(CLI::PositiveNumber);
  opts->domains = std::make_unique<tune::TuneFlags>(*cmd, tune::Registry::instance());
  cmd->add_flag("--json", opts->json, "Print one JSON object at the end");
  addExecutorOptions(*cmd, opts->executor,
                     "Where evaluations run their commands: local, or slurm (each command a batch job; needs "
                     "--evaluator command or --kernel)");
  const char *llm = "LLM agent (--agent llm; docs/LLM.md)";
  addLlmFlags(cmd, c.llm, llm);
  CLI::Option *keyOption = addRefusedKeyOption(*cmd, opts->refusedKey);
  cmd->callback([opts, &action, keyOption, cmd, llm] {
    refuseKey(keyOption);
    action = [opts, cmd, llm]() -> int { return startTune(*opts, cmd, llm); };
  });
}

void addResumeCommand(CLI::App &app, Action &action) {
  struct Options {
    int64_t run = 0;
    std::string db = "hone.db", out, llmUrl;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("resume", "Continue an interrupted run: nothing is lost or evaluated twice");
  cmd->add_option("run", opts->run, "Run id (hone runs lists them)")->required();
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_option("--out", opts->out, "Where to write the best mapper");
  cmd->add_flag("--json", opts->json, "Print one JSON object at the end");
  cmd->add_option("--llm-url", opts->llmUrl, "LLM runs: the endpoint now (when the server moved)");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto opened = openRun(opts->db, opts->run);
      if (!opened)
        return kUsage;
      const store::RunInfo *run = &opened->run;
      auto config = TuneConfig::fromJson(run->config);
      if (!config) {
        std::cerr << "hone: run " << opts->run << ": " << config.error().message << "\n";
        return kUsage;
      }
      if (!opts->llmUrl.empty())
        config->llm.client.url = opts->llmUrl;
      opened.reset(); // the session opens the store itself
      return runAndPrint(*config, opts->db, opts->run, opts->out, opts->json);
    };
  });
}

} // namespace hone::cli
