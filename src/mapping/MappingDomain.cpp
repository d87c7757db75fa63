#include "mapping/MappingDomain.h"

#include "mapping/Agents.h"
#include "mapping/LlmAgent.h"
#include "mapping/Space.h"
#include "mapping/Surrogate.h"
#include "model/Catalog.h"
#include "support/FileUtil.h"
#include "tune/SearchAgents.h"

#include <fmt/format.h>

#include <set>

#include <filesystem>

namespace hone::mapping {

using nlohmann::json;

json MappingOptions::toJson() const {
  json j{{"app", app}, {"machine", machine}, {"noise", noise}, {"evaluator", evaluator}};
  if (size)
    j["size"] = *size;
  if (evaluator == "command")
    j["command"] = {{"build", command.build},       {"run", command.run},
                    {"metric", command.metric},     {"higher_is_better", command.higherIsBetter},
                    {"timeout_s", command.timeoutS}, {"memory_limit_bytes", command.memoryLimitBytes},
                    {"workdir", command.workdir},   {"repeats", command.repeats}};
  if (!surrogate.empty())
    j["surrogate"] = {{"kind", surrogate}, {"simulations", surrogateSimulations}};
  return j;
}

support::Expected<MappingOptions> MappingOptions::fromJson(const json &j) {
  try {
    MappingOptions d, o;
    tune::JsonReader r(j, "the run's mapping options");
    o.app = r.get<std::string>("app");
    o.machine = r.get<std::string>("machine", d.machine);
    o.size = r.optional<double>("size");
    o.noise = r.get<double>("noise", d.noise);
    o.evaluator = r.get<std::string>("evaluator", d.evaluator);
    if (const json &k = r.raw("command"); !k.is_null()) {
      tune::JsonReader c(k, "the run's mapping options: command");
      o.command.build = c.get<std::string>("build", "");
      o.command.run = c.get<std::string>("run", "");
      o.command.metric = c.get<std::string>("metric", "");
      o.command.higherIsBetter = c.get<bool>("higher_is_better", false);
      o.command.timeoutS = c.get<double>("timeout_s", d.command.timeoutS);
      o.command.memoryLimitBytes = c.get<size_t>("memory_limit_bytes", 0);
      o.command.workdir = c.get<std::string>("workdir", "");
      o.command.repeats = c.get<int>("repeats", 1);
      if (o.command.repeats < 1)
        throw std::runtime_error("the run's mapping options: command: repeats must be at least 1");
      c.finish();
    }
    if (const json &k = r.raw("surrogate"); !k.is_null()) {
      tune::JsonReader c(k, "the run's mapping options: surrogate");
      o.surrogate = c.get<std::string>("kind");
      o.surrogateSimulations = c.get<size_t>("simulations", d.surrogateSimulations);
      c.finish();
    }
    r.finish();
    return o;
  } catch (const std::exception &e) {
    return support::Error{e.what()};
  }
}

support::Expected<LoadedModels> loadModels(const std::string &appName, const std::string &machineName,
                                           std::optional<double> size) {
  auto machinePath = model::findModel("machines", machineName);
  if (!machinePath)
    return support::Error{"--machine: " + machinePath.error().message};
  auto appPath = model::findModel("apps", appName);
  if (!appPath)
    return support::Error{"--app: " + appPath.error().message};
  LoadedModels out;
  auto machine = model::loadMachine(*machinePath);
  if (!machine)
    return machine.error();
  out.machine = std::make_unique<model::MachineModel>(std::move(*machine));
  auto app = model::loadApp(*appPath);
  if (!app)
    return app.error();
  out.app = std::make_unique<model::AppModel>(std::move(*app));
  auto program = model::instantiate(*out.app, *out.machine, size);
  if (!program)
    return program.error();
  out.program = std::make_unique<model::Program>(std::move(*program));
  return out;
}

namespace {

/// The K-shot examples: the shipped mappers of the other applications, by name.
std::vector<ExampleMapper> examplesFor(const std::string &app) {
  std::vector<ExampleMapper> out;
  for (const auto &path : exampleMappers()) {
    std::string name = std::filesystem::path(path).stem().string();
    if (name == app)
      continue;
    if (auto text = support::readFile(path))
      out.push_back({fmt::format("the expert mapper of {}", name), *text}); // no path: prompts are the same anywhere
  }
  return out;
}

class MappingProblem final : public tune::Problem {
public:
  MappingProblem(MappingOptions options, LoadedModels models)
      : options_(std::move(options)), models_(std::move(models)),
        space_(Space::build(*models_.app, *models_.machine)),
        modelEval_(*models_.machine, *models_.app, *models_.program, options_.noise) {
    expertPath_ = findExpertMapper(models_.app->name);
    if (expertPath_)
      if (auto text = support::readFile(*expertPath_))
        expertText_ = *text;
  }
  support::Expected<bool> makeCommandEvaluator(const tune::TuneConfig &config) {
    if (config.executor != "local" && options_.evaluator != "command")
      return support::Error{fmt::format("--executor {}: the model evaluator runs no command; it goes with "
                                        "--evaluator command",
                                        config.executor)};
    options_.command.executor = config.commandExecutor;
    // Candidates' files where the commands' machines see them (this machine's /tmp is not a node's).
    if (options_.command.workdir.empty() && config.commandExecutor && !config.commandExecutor->sharedDir().empty())
      options_.command.workdir = (std::filesystem::path(config.commandExecutor->sharedDir()) / "candidates").string();
    if (options_.evaluator == "command") {
      // The app's tasks that never run in the measured part: a real profile's statistics skip them.
      std::set<int> timed;
      for (const auto &pt : models_.program->tasks)
        if (pt.timed)
          timed.insert(pt.task);
      options_.command.untimedTasks.clear();
      for (size_t t = 0; t < models_.app->tasks.size(); ++t)
        if (!timed.count(static_cast<int>(t)) && models_.app->tasks[t].name != models_.app->topTask)
          options_.command.untimedTasks.push_back(models_.app->tasks[t].name);
      auto made = CommandEvaluator::make(options_.command);
      if (!made)
        return made.error();
      commandEval_.emplace(std::move(*made));
    } else if (options_.evaluator != "model") {
      return support::Error{fmt::format("--evaluator: '{}' is not one of model, command", options_.evaluator)};
    }
    return true;
  }

  std::string subject() const override { return options_.app; }
  std::string machine() const override { return options_.machine; }
  engine::EvalResult evaluate(const engine::Candidate &c) override {
    return commandEval_ ? commandEval_->evaluate(c) : modelEval_.evaluate(c);
  }
  std::pair<std::string, std::string> reference() const override {
    // The expert mapper scores 1.0; without one, the start does.
    if (!expertText_.empty())
      return {expertText_, "the expert mapper " + *expertPath_};
    return {start_, "the starting mapper"};
  }
  double baselineOf(const engine::EvalResult &r) const override {
    auto it = r.metrics.find(commandEval_ ? "metric" : "throughput");
    return it == r.metrics.end() ? 0 : it->second;
  }
  std::string baselineMetricName() const override { return commandEval_ ? "metric" : "throughput"; }
  bool referenceMustRun() const override { return commandEval_.has_value(); }
  void setBaseline(double b) override {
    modelEval_.setBaseline(b);
    if (commandEval_)
      commandEval_->setBaseline(b);
  }
  std::pair<std::string, std::string> defaultStart() const override {
    if (!expertText_.empty())
      return {expertText_, fmt::format("the expert mapper {}", *expertPath_)};
    return {space_.render(space_.defaults()), "the decision space's defaults (no expert mapper for this app)"};
  }
  const tune::CategoricalSpace *space() const override { return &space_; }
  support::Expected<std::string> writeBest(const engine::Step &best, const std::string &path,
                                           const std::string &header) const override {
    std::string why;
    if (!support::writeFileAtomically(path, "# " + header + "\n" + best.candidate.artifact, &why))
      return support::Error{why};
    return path;
  }
  std::string defaultBestName(int64_t runId) const override {
    return fmt::format("best-{}-run{}.map", options_.app, runId);
  }

  support::Expected<std::unique_ptr<engine::Strategy>> decorateAgent(std::unique_ptr<engine::Strategy> agent,
                                                                    const tune::AgentContext &c) override {
    if (options_.surrogate.empty())
      return agent;
    if (options_.surrogate != "model")
      return support::Error{fmt::format("--surrogate: '{}' is not a surrogate hone has (model)", options_.surrogate)};
    if (!commandEval_)
      return support::Error{"--surrogate model needs a real evaluator (--evaluator command): on the model evaluator "
                            "the surrogate would be the evaluator itself, spending the budget's own oracle for free"};
    if (c.client) // an agent that asks a model
      return support::Error{"--surrogate model drives the agent on the model thousands of times: use it with "
                            "guided, ensemble or random, not llm"};
    // Predictions are relative to the expert on the model, as real scores are to the expert for real.
    double expert = 0;
    auto [refText, refLabel] = reference();
    engine::EvalResult ref = modelEval_.evaluate(engine::Candidate::make(refText));
    if (auto it = ref.metrics.find("throughput"); ref.ok() && it != ref.metrics.end())
      expert = it->second;
    if (!(expert > 0))
      return support::Error{fmt::format("--surrogate model: {} does not run on the model ({}), so the model "
                                        "cannot rank candidates against it",
                                        refLabel, ref.error)};
    auto predict = [this, expert](const engine::Candidate &cand) {
      engine::EvalResult r = modelEval_.evaluate(cand);
      auto it = r.metrics.find("throughput");
      r.score = r.ok() && it != r.metrics.end() ? it->second / expert : 0;
      return r;
    };
    SurrogateOptions so;
    so.simulationsPerEvaluation = options_.surrogateSimulations;
    std::vector<std::unique_ptr<engine::Strategy>> searchers;
    searchers.push_back(std::move(agent));
    if (c.config.agent != tune::kEnsembleAgent) // when the agent runs dry on the model, the ensemble searches on
      searchers.push_back(tune::makeEnsembleAgent(space_, c.config.seed));
    return makeSurrogateAgent(std::move(searchers), predict, c.start, so);
  }

  const Space &decisionSpace() const { return space_; }
  const LoadedModels &models() const { return models_; }
  void setStart(const std::string &start) { start_ = start; }

private:
  MappingOptions options_;
  LoadedModels models_;
  Space space_;
  ModelEvaluator modelEval_;
  std::optional<CommandEvaluator> commandEval_;
  std::optional<std::string> expertPath_;
  std::string expertText_;
  std::string start_;
};

/// A run's mapping options and the models they name.
support::Expected<std::pair<MappingOptions, LoadedModels>> optionsAndModels(const tune::TuneConfig &config) {
  auto options = MappingOptions::fromJson(config.options);
  if (!options)
    return options.error();
  auto models = loadModels(options->app, options->machine, options->size);
  if (!models)
    return models.error();
  return std::make_pair(std::move(*options), std::move(*models));
}

class MappingDomain final : public tune::Domain {
public:
  std::string name() const override { return kDomainName; }
  std::string artifactName() const override { return "mapper"; }
  support::Expected<std::unique_ptr<tune::Problem>> open(tune::TuneConfig &config) const override {
    auto loaded = optionsAndModels(config);
    if (!loaded)
      return loaded.error();
    auto problem = std::make_unique<MappingProblem>(std::move(loaded->first), std::move(loaded->second));
    if (auto ok = problem->makeCommandEvaluator(config); !ok)
      return ok.error();
    problem->setStart(config.start.empty() ? problem->defaultStart().first : config.start);
    return std::unique_ptr<tune::Problem>(std::move(problem));
  }
  support::Expected<std::optional<std::string>> checkStart(const tune::TuneConfig &config, const std::string &text,
                                                           const std::string &label) const override {
    auto loaded = optionsAndModels(config);
    if (!loaded)
      return loaded.error();
    auto bad = rejectIfInvalid(text, loaded->second.app.get());
    if (!bad)
      return std::optional<std::string>();
    std::string diags = bad->rawOutput;
    for (size_t at = diags.find("candidate.map"); at != std::string::npos;
         at = diags.find("candidate.map", at + label.size()))
      diags.replace(at, 13, label);
    return std::optional<std::string>(diags);
  }
  std::string chooser() const override { return "--app APP (a Legion application model)"; }
  std::unique_ptr<tune::DomainFlags> addTuneFlags(CLI::App &cmd, const tune::CommonFlags &common) const override {
    return addMappingTuneFlags(cmd, common);
  }
};

MappingProblem &mappingProblem(tune::Problem &p) { return static_cast<MappingProblem &>(p); }

} // namespace

void registerMappingDomain(tune::Registry &registry) {
  registry.addDomain(std::make_unique<MappingDomain>());
  registry.addAgent({"guided",
                     "edits that each answer the profile's evidence, from the expert mapper",
                     {kDomainName},
                     [](tune::Problem &p, const tune::AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       MappingProblem &m = mappingProblem(p);
                       return makeGuidedAgent(m.decisionSpace(), *m.models().app, c.start, c.startLabel,
                                              c.config.seed);
                     },
                     /*asksModel=*/false, /*usesStart=*/true, /*isDefault=*/true});
  tune::registerSearchAgents(registry);
  registry.addAgent({"llm",
                     "a language model proposes mappers from AutoGuide's feedback (docs/LLM.md)",
                     {kDomainName},
                     [](tune::Problem &p, const tune::AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       MappingProblem &m = mappingProblem(p);
                       const tune::LlmConfig &l = c.config.llm;
                       auto base = tune::optimizerOptions(c.config, c.client);
                       if (!base)
                         return base.error();
                       if (l.mode != "single")
                         return support::Error{"--llm-mode: the mapping domain has only the single mode (a mapper "
                                               "is one request)"};
                       LlmAgentOptions o;
                       static_cast<tune::LlmOptimizerOptions &>(o) = std::move(*base);
                       o.program = m.models().program.get();
                       if (*parseOptimizer(l.optimizer) > 0)
                         o.examples = examplesFor(m.models().app->name);
                       return std::unique_ptr<engine::Strategy>(std::make_unique<LlmAgent>(
                           *m.models().app, *m.models().machine, c.start, c.startLabel, *c.client, std::move(o)));
                     },
                     /*asksModel=*/true});
}

} // namespace hone::mapping
