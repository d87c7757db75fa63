#include "kernel/KernelDomain.h"

#include "kernel/CodeAgent.h"
#include "kernel/Evaluator.h"
#include "kernel/Runner.h"
#include "kernel/SourceKnobs.h"
#include "support/FileUtil.h"
#include "support/StringUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>
#include <unistd.h>

namespace hone::kernel {

namespace fs = std::filesystem;
using nlohmann::json;

json KernelOptions::toJson() const {
  return {{"project", project},
          {"workdir", workdir},
          {"profile", profile},
          {"ncu_report", ncuReport},
          {"source_transforms", sourceTransforms},
          {"final_rounds", finalRounds},
          {"project_files", projectFiles}};
}

support::Expected<KernelOptions> KernelOptions::fromJson(const json &j) {
  try {
    KernelOptions o;
    tune::JsonReader r(j, "the run's kernel options");
    o.project = r.get<std::string>("project");
    o.workdir = r.get<std::string>("workdir", "");
    o.profile = r.get<bool>("profile", true);
    o.ncuReport = r.get<std::string>("ncu_report", "");
    o.sourceTransforms = r.get<bool>("source_transforms", true);
    o.finalRounds = r.get<int>("final_rounds", 3);
    o.projectFiles = r.get<std::map<std::string, std::string>>("project_files", {});
    if (o.finalRounds < 0 || o.finalRounds > 100)
      throw std::runtime_error("the run's kernel options: final_rounds must be 0 to 100");
    r.finish();
    return o;
  } catch (const std::exception &e) {
    return support::Error{e.what()};
  }
}

std::map<std::string, std::string> projectFiles(const Manifest &m) {
  std::map<std::string, std::string> out;
  auto add = [&](const std::string &name, const std::string &path) {
    // Only regular files of a sane size are read: a link to a device or a pipe must not hang the run.
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (256u << 20) || ec) {
      out[name] = "(not a regular file of at most 256 MiB)";
      return;
    }
    auto text = support::readFile(path);
    out[name] = text ? engine::contentHash(*text) : "(unreadable)";
  };
  add("hone.toml", m.path);
  for (const auto &f : m.sources)
    add(f, (fs::path(m.dir) / f).string());
  for (const auto &f : m.editable)
    add(f, (fs::path(m.dir) / f).string());
  return out;
}

// ---- the knob space ------------------------------------------------------------------

KnobSpace::KnobSpace(const Manifest &m) : manifest_(m) {
  for (const auto &k : m.knobs) {
    std::vector<std::string> values{k.values[k.defaultIndex]};
    for (size_t i = 0; i < k.values.size(); ++i)
      if (i != k.defaultIndex)
        values.push_back(k.values[i]);
    knobs_.push_back({k.name, values});
  }
}

std::vector<size_t> KnobSpace::sizes() const {
  std::vector<size_t> out;
  for (const auto &[n, v] : knobs_)
    out.push_back(v.size());
  return out;
}

KnobValues KnobSpace::values(const std::vector<int> &a) const {
  KnobValues out;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const auto &v = knobs_[i].second;
    size_t index = i < a.size() ? static_cast<size_t>(std::max(0, a[i])) : 0;
    out[knobs_[i].first] = v[std::min(index, v.size() - 1)];
  }
  return out;
}

std::string KnobSpace::render(const std::vector<int> &a) const {
  return renderKnobs(manifest_, values(a));
}

// ---- the problem ---------------------------------------------------------------------

namespace {

std::string hostLabel() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0)
    std::snprintf(name, sizeof name, "local");
  return fmt::format("{} ({} cores)", name, std::max(1u, std::thread::hardware_concurrency()));
}

class KernelProblem final : public tune::Problem {
public:
  KernelProblem(Manifest m, EvaluatorSettings s, std::vector<Transformation> catalogue, int finalRounds)
      : manifest_(m), space_(m), checkDir_((fs::path(s.workdir) / "llm-check").string()),
        evaluator_(std::move(m), std::move(s)), finalRounds_(finalRounds), catalogue_(std::move(catalogue)) {}
  support::Expected<bool> prepare() { return evaluator_.prepare(); }

  std::string subject() const override { return manifest_.name; }
  std::string machine() const override { return hostLabel(); }
  engine::EvalResult evaluate(const engine::Candidate &c) override { return evaluator_.evaluate(c); }
  std::pair<std::string, std::string> reference() const override {
    return {renderVariant(referenceVariant(manifest_)), referenceLabel()};
  }
  double baselineOf(const engine::EvalResult &r) const override {
    auto it = r.metrics.find("time_s");
    return it == r.metrics.end() ? 0 : it->second;
  }
  std::string baselineMetricName() const override { return "1/time"; }
  void setBaseline(double b) override { evaluator_.setBaseline(b); }
  std::pair<std::string, std::string> defaultStart() const override { return reference(); }
  const tune::CategoricalSpace *space() const override { return &space_; }

  support::Expected<std::string> writeBest(const engine::Step &best, const std::string &path,
                                           const std::string &header) const override {
    auto v = parseVariant(manifest_, best.candidate.artifact);
    if (!v)
      return v.error();
    std::error_code ec;
    fs::path dir = fs::absolute(path, ec);
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      return support::Error{fmt::format("{} exists and is not a folder", dir.string())};
    fs::create_directories(dir, ec);
    if (ec)
      return support::Error{fmt::format("cannot create {}: {}", dir.string(), ec.message())};
    std::string why;
    auto write = [&](const fs::path &p, const std::string &text) {
      return support::writeFileAtomically(p.string(), text, &why);
    };
    for (const auto &[name, text] : v->files)
      if (!write(dir / name, text))
        return support::Error{why};
    Expansion e = expand(manifest_, *v);
    std::string command = buildCommand(manifest_, *v, dir.string());
    std::string script = buildScript(manifest_, *v, dir.string(), header);
    if (!write(dir / "build.sh", script) ||
        !write(dir / "variant.toml", "# " + support::printable(header) + "\n" + best.candidate.artifact))
      return support::Error{why};
    fs::permissions(dir / "build.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
    json summary{{"header", header},
                 {"knobs", v->knobs},
                 {"edited_files", json::array()},
                 {"build_command", command},
                 {"environment", e.env},
                 {"metrics", best.result.metrics},
                 {"score", best.result.score}};
    for (const auto &[name, text] : v->files)
      summary["edited_files"].push_back(name);
    note_.clear();
    if (finalRounds_ > 0) {
      // Every kernel result states its speedup over the compiler-only baseline too, measured side by side.
      json c = evaluator_.compareWithCompilerOnly(*v, finalRounds_);
      summary["side_by_side"] = c;
      note_ = sideBySideNote(c);
    }
    if (!write(dir / "best.json", summary.dump(2) + "\n"))
      return support::Error{why};
    return dir.string();
  }
  std::string bestNote() const override { return note_; }
  std::string defaultBestName(int64_t runId) const override {
    return fmt::format("best-{}-run{}", manifest_.name, runId);
  }

  const Manifest &manifest() const { return manifest_; }
  const std::vector<Transformation> &catalogue() const { return catalogue_; }
  /// Where the code agent compiles a candidate before proposing it.
  const std::string &checkDir() const { return checkDir_; }

private:
  std::string referenceLabel() const {
    std::string label = fmt::format("the unmodified {} (default knobs, flags '{}')", manifest_.name, manifest_.flags);
    if (manifest_.timing.mode == "region") // which time the scores compare
      label += "; timed: " + timedWhat(manifest_);
    if (!evaluator_.weakValidationNote().empty()) // said wherever the run is: the header, hone show, the report
      label += "; " + evaluator_.weakValidationNote();
    return label;
  }
  static std::string sideBySideNote(const json &c) {
    if (c.contains("skipped"))
      return "side by side: not measured (" + c["skipped"].get<std::string>() + ")";
    const json &co = c["compiler_only"];
    std::string flags = co.value("flags", "");
    if (co.contains("error"))
      return fmt::format("side by side ({} rounds): the best {:.2f}x the unmodified program; the compiler-only "
                         "baseline ({}) {}",
                         c["rounds"].get<int>(), c["best"]["speedup"].get<double>(), flags,
                         co["error"].get<std::string>());
    return fmt::format("side by side ({} rounds): the best {:.2f}x the unmodified program and {:.2f}x the "
                       "compiler-only baseline ({}, itself {:.2f}x)",
                       c["rounds"].get<int>(), c["best"]["speedup"].get<double>(),
                       c["best"]["over_compiler_only"].get<double>(), flags, co["speedup"].get<double>());
  }
  Manifest manifest_;
  KnobSpace space_;
  std::string checkDir_;
  mutable KernelEvaluator evaluator_; // writeBest times the best side by side
  int finalRounds_ = 3;
  mutable std::string note_;
  std::vector<Transformation> catalogue_;
};

class KernelDomain final : public tune::Domain {
public:
  std::string name() const override { return kDomainName; }
  std::string artifactName() const override { return "variant"; }
  std::string scoreName() const override { return "speedup"; }
  support::Expected<std::unique_ptr<tune::Problem>> open(tune::TuneConfig &config) const override {
    auto options = KernelOptions::fromJson(config.options);
    if (!options)
      return options.error();
    auto m = loadManifest(options->project);
    if (!m)
      return m.error(); // with its location: a manifest is input (exit 1)
    // The run records where its project is and what it was: a resume from another folder, or after
    // the program or its manifest changed, would mix the steps of two programs in one run.
    auto files = projectFiles(*m);
    if (!options->projectFiles.empty() && options->projectFiles != files) {
      std::vector<std::string> changed;
      for (const auto &[name, hash] : files)
        if (auto was = options->projectFiles.find(name); was == options->projectFiles.end() || was->second != hash)
          changed.push_back(name);
      for (const auto &[name, hash] : options->projectFiles)
        if (!files.count(name))
          changed.push_back(name + " (no longer in the manifest)");
      return support::Error{fmt::format(
          "the project {} is not what this run tuned: {} changed since the run started, and the steps of two "
          "programs would be mixed; start a new run with hone tune --kernel {}",
          m->dir, fmt::join(changed, ", "), m->dir)};
    }
    std::error_code absent;
    config.options["project"] = fs::absolute(options->project, absent).lexically_normal().string();
    config.options["project_files"] = files;
    if (options->sourceTransforms)
      if (auto plan = addSourceKnobs(*m); !plan)
        return plan.error();
    m->executor = config.commandExecutor; // builds and runs, the reference's too, run where the user said
    auto catalogue = loadCatalogue();
    if (!catalogue)
      return catalogue.error();
    EvaluatorSettings s;
    std::error_code ec;
    s.workdir = options->workdir.empty() ? (fs::path(m->dir) / ".hone" / "candidates").string()
                                         : fs::absolute(options->workdir, ec).string();
    s.runSeed = config.seed;
    s.profile = options->profile;
    s.profileOptions.ncuReport = options->ncuReport;
    s.profileOptions.seed = m->seeds.front();
    auto problem =
        std::make_unique<KernelProblem>(std::move(*m), std::move(s), std::move(*catalogue), options->finalRounds);
    if (auto ok = problem->prepare(); !ok)
      return ok.error();
    return std::unique_ptr<tune::Problem>(std::move(problem));
  }
  support::Expected<std::optional<std::string>> checkStart(const tune::TuneConfig &config, const std::string &text,
                                                           const std::string &label) const override {
    auto options = KernelOptions::fromJson(config.options);
    if (!options)
      return options.error();
    auto m = loadManifest(options->project);
    if (!m)
      return m.error();
    if (options->sourceTransforms)
      if (auto plan = addSourceKnobs(*m); !plan)
        return plan.error();
    auto v = parseVariant(*m, text);
    if (v)
      return std::optional<std::string>();
    std::string where = v.error().line > 0 ? fmt::format("{}:{}", label, v.error().line) : label;
    return std::optional<std::string>(fmt::format("{}: error: {}\n", where, v.error().message));
  }
  std::string chooser() const override { return "--kernel DIR (a kernel project)"; }
  std::unique_ptr<tune::DomainFlags> addTuneFlags(CLI::App &cmd, const tune::CommonFlags &common) const override {
    return addKernelTuneFlags(cmd, common);
  }
};

} // namespace

void registerKernelDomain(tune::Registry &registry) {
  registry.addDomain(std::make_unique<KernelDomain>());
  registry.addAgent({"guided",
                     "knob edits that answer the profile's diagnosis, from the unmodified project",
                     {kDomainName},
                     [](tune::Problem &p, const tune::AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       auto &k = static_cast<KernelProblem &>(p);
                       return makeGuidedKernelAgent(k.manifest(), k.catalogue(), c.start, c.startLabel);
                     },
                     /*asksModel=*/false, /*usesStart=*/true, /*isDefault=*/true});
  tune::registerSearchAgents(registry);
  registry.addAgent({"llm",
                     "a language model rewrites the code from the profile's diagnostics and the transformation "
                     "catalogue (docs/LLM.md)",
                     {kDomainName},
                     [](tune::Problem &p, const tune::AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       auto &k = static_cast<KernelProblem &>(p);
                       const tune::LlmConfig &l = c.config.llm;
                       auto o = tune::optimizerOptions(c.config, c.client);
                       if (!o)
                         return o.error();
                       if (*tune::parseOptimizer(l.optimizer) > 0)
                         return support::Error{"--optimizer: the kernel domain has no example kernels for K-shot "
                                               "prompts; use trace, opro or 0-shot"};
                       auto codec = std::make_unique<KernelCodec>(k.manifest(), k.catalogue(), k.checkDir(),
                                                                  l.promptDirs, k.machine());
                       return std::unique_ptr<engine::Strategy>(std::make_unique<tune::LlmOptimizer>(
                           std::move(codec), c.start, c.startLabel, *c.client, std::move(*o)));
                     },
                     /*asksModel=*/true});
}

} // namespace hone::kernel
