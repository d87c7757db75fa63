// hone kernel init PROGRAM.c|.cpp|.cu [--include DIR] [--source FILE] [--define NAME[=V]] [--force]
// hone kernel check DIR [--json]
// hone kernel measure DIR [--knob NAME=VALUE ...] [--variant FILE ...] [--rounds N] [--json]
// hone kernel profile DIR [--knob NAME=VALUE ...] [--ncu REPORT.csv] [--json]
// The kernel domain's commands outside a tuning run (docs/KERNELS.md).
#include "cli/Commands.h"

#include "autoguide/AutoGuide.h"
#include "kernel/Diagnose.h"
#include "kernel/Evaluator.h"
#include "kernel/Init.h"
#include "kernel/KernelDomain.h"
#include "kernel/Manifest.h"
#include "kernel/Runner.h"
#include "kernel/SourceKnobs.h"
#include "support/FileUtil.h"
#include "support/StringUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

namespace hone::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The manifest of `dir`, or the printed reason and its exit code in `*failure` (exitCodeOf: a
/// located error in hone.toml is rejected input).
/// The manifest of `dir` with hone's source knobs (a C/C++ project's nests, docs/KERNELS.md
/// "Source transformations"), so that --knob and a run's variant.toml may name them; `plan` gets
/// what each nest admits.
std::optional<kernel::Manifest> manifestOrPrint(const std::string &dir, int *failure, std::string *plan = nullptr) {
  auto m = kernel::loadManifest(dir);
  if (!m) {
    std::cerr << "hone: " << m.error().message << "\n";
    *failure = exitCodeOf(m.error());
    return std::nullopt;
  }
  auto described = kernel::addSourceKnobs(*m);
  if (!described) {
    std::cerr << "hone: " << described.error().message << "\n";
    *failure = exitCodeOf(described.error());
    return std::nullopt;
  }
  if (plan)
    *plan = std::move(*described);
  return std::move(*m);
}

/// The variant of --knob NAME=VALUE options over the manifest's defaults.
std::optional<kernel::Variant> variantOf(const kernel::Manifest &m, const std::vector<std::string> &knobs) {
  kernel::Variant v = kernel::referenceVariant(m);
  for (const auto &k : knobs) {
    size_t eq = k.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "hone: --knob " << k << ": expected NAME=VALUE\n";
      return std::nullopt;
    }
    v.knobs[k.substr(0, eq)] = k.substr(eq + 1);
  }
  if (auto ok = kernel::checkValues(m, v.knobs); !ok) {
    std::cerr << "hone: --knob: " << ok.error().message << "\n";
    return std::nullopt;
  }
  return v;
}

/// The manifest of `dir` and the variant of --knob options, or the printed reason.
std::optional<std::pair<kernel::Manifest, kernel::Variant>>
projectAndVariant(const std::string &dir, const std::vector<std::string> &knobs, int *failure,
                  std::string *plan = nullptr) {
  auto m = manifestOrPrint(dir, failure, plan);
  if (!m)
    return std::nullopt;
  auto v = variantOf(*m, knobs);
  if (!v) {
    *failure = kUsage;
    return std::nullopt;
  }
  return std::make_pair(std::move(*m), std::move(*v));
}

std::string scratch(const kernel::Manifest &m, const std::string &what) {
  return (fs::path(m.dir) / ".hone" / what).string();
}

std::string seconds(double s) {
  return s >= 1 ? fmt::format("{:.3f} s", s) : fmt::format("{:.2f} ms", s * 1000);
}

void addInit(CLI::App &parent, Action &action) {
  struct Options {
    std::string program;
    std::vector<std::string> includes, sources, defines;
    bool force = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = parent.add_subcommand("init", "Write a commented hone.toml beside a program (its headers, companion "
                                            "sources, outputs and dataset found by a scan)");
  cmd->add_option("program", opts->program, "The program: a .c, .cpp or .cu file that prints its results")->required();
  cmd->add_option("--include", opts->includes, "An include folder (repeatable), searched before the program's own "
                                               "folders");
  cmd->add_option("--source", opts->sources, "Another source file to compile with the program (repeatable; not "
                                             "editable)");
  cmd->add_option("--define", opts->defines, "NAME[=VALUE] for every build (repeatable), e.g. a dataset size");
  cmd->add_flag("--force", opts->force, "Overwrite an existing hone.toml");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto source = support::readFile(opts->program);
      if (!source) {
        std::cerr << "hone: cannot read " << opts->program << ": " << source.error().message << "\n";
        return kUsage;
      }
      kernel::InitOptions io;
      io.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      io.scan.includeDirs = opts->includes;
      io.scan.sources = opts->sources;
      io.defines = opts->defines;
      auto init = kernel::initProject(opts->program, *source, io);
      if (!init) {
        std::cerr << "hone: " << init.error().message << "\n";
        return kUsage;
      }
      fs::path target = fs::absolute(opts->program).parent_path() / "hone.toml";
      std::error_code ec;
      if (fs::exists(target, ec) && !opts->force) {
        std::cerr << "hone: " << target.string() << " exists; --force replaces it\n";
        return kUsage;
      }
      // Our own output must load before it is written: a manifest that does not is never left behind.
      auto m = kernel::parseManifest(target.string(), init->text);
      if (!m) {
        std::cerr << "hone: internal error: the manifest hone would write does not load: " << m.error().message
                  << "\n";
        return kInternal;
      }
      std::string why;
      if (!support::writeFileAtomically(target.string(), init->text, &why)) {
        std::cerr << "hone: " << why << "\n";
        return kUsage;
      }
      for (const auto &n : init->notes)
        std::cout << n << "\n";
      std::cout << fmt::format("wrote {}: {} knobs ({}); check it with: hone kernel check {}\n", target.string(),
                               m->knobs.size(), fmt::join(m->knobNames(), ", "), target.parent_path().string());
      return kOk;
    };
  });
}

void addCheck(CLI::App &parent, Action &action) {
  struct Options {
    std::string dir;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = parent.add_subcommand(
      "check", "Build the project, run it twice per seed, validate it against itself and report timing noise");
  cmd->add_option("dir", opts->dir, "Project folder (or its hone.toml)")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      int failure = kUsage;
      auto m = manifestOrPrint(opts->dir, &failure);
      if (!m)
        return failure;
      kernel::Variant ref = kernel::referenceVariant(*m);
      json out{{"project", m->name}, {"manifest", m->path}, {"knobs", m->knobNames()}};
      std::vector<std::string> problems;
      kernel::BuildResult b = kernel::buildValidated(*m, ref, scratch(*m, "check"));
      kernel::BuildResult tb = b.ok ? kernel::buildTimed(*m, ref, scratch(*m, "check"), b) : b;
      out["build"] = {{"ok", b.ok}, {"command", b.command}, {"seconds", b.seconds}};
      if (m->splitBuilds() && b.ok) {
        out["timed_build"] = {{"ok", tb.ok}, {"command", tb.command}, {"seconds", tb.seconds}};
        if (!tb.ok)
          problems.push_back(fmt::format("the timed build failed ({}):\n{}", tb.error, tb.log.substr(0, 4000)));
      }
      if (!b.ok) {
        problems.push_back(fmt::format("the build failed ({}):\n{}", b.error, b.log.substr(0, 4000)));
      } else {
        json seeds = json::array();
        for (uint64_t seed : m->seeds) {
          kernel::RunResult r1 = kernel::runOnce(*m, ref, b.exe, scratch(*m, "check/a"), seed);
          kernel::RunResult r2 = kernel::runOnce(*m, ref, b.exe, scratch(*m, "check/b"), seed);
          json s{{"seed", seed}, {"outputs", r1.values.size()}, {"seconds", r1.process.seconds}};
          if (!r1.ok() || !r2.ok()) {
            problems.push_back(fmt::format("seed {}: {}", seed, !r1.ok() ? r1.error : r2.error));
          } else if (auto mm = kernel::compareOutputs(m->output, r1.values, r2.values, &r1.units)) {
            problems.push_back(fmt::format("seed {}: two runs of the unmodified program differ beyond the tolerance "
                                           "(nondeterministic, or the tolerance is too tight): {}",
                                           seed, mm->message));
          }
          if (auto weak = r1.ok() ? kernel::weakValidation(r1.values, r1.units) : std::nullopt)
            out["warning"] = *weak;
          seeds.push_back(s);
        }
        out["seeds"] = seeds;
        if (m->seeds.size() > 1 && problems.empty()) {
          auto a = kernel::runOnce(*m, ref, b.exe, scratch(*m, "check/a"), m->seeds[0]);
          auto c = kernel::runOnce(*m, ref, b.exe, scratch(*m, "check/c"), m->seeds[1]);
          if (a.ok() && c.ok() && a.values == c.values)
            out["note"] = "the outputs do not change with the seed: the program ignores {seed} (validation then "
                          "cannot catch outputs that ignore the input)";
        } else if (problems.empty()) {
          out["note"] = "one validation input: the program's inputs are fixed, so the guard \"outputs do not change "
                        "with the input\" cannot fire (validation compares the outputs with the reference's only)";
        }
        if (problems.empty()) {
          kernel::EvaluatorSettings es;
          es.workdir = scratch(*m, "check");
          es.profile = false;
          kernel::KernelEvaluator ev(*m, es);
          auto t = ev.time(ref, tb.exe, scratch(*m, "check"));
          if (!t) {
            problems.push_back("timing: " + t.error().message);
          } else {
            out["timing"] = {{"median_s", t->median}, {"ci95_s", t->ci95}, {"stddev_s", t->stddev},
                             {"repeats", t->samples.size()}, {"converged", t->converged},
                             {"noise", t->median > 0 ? t->ci95 / t->median : 0}, {"timed", kernel::timedWhat(*m)}};
            if (m->timing.mode == "region")
              out["timing"]["process_median_s"] = t->processMedian;
          }
        }
      }
      out["ok"] = problems.empty();
      out["problems"] = problems;
      if (opts->json) {
        std::cout << out.dump(2) << "\n";
      } else {
        std::set<std::string> nests;
        size_t source = 0;
        for (const auto &k : m->knobs)
          if (k.kind == kernel::KnobKind::Source) {
            ++source;
            nests.insert(fmt::format("{}:{}", k.nestFile, k.nestLine));
          }
        std::cout << fmt::format("{} ({}): {} knobs{}\n", m->name, m->path, m->knobs.size(),
                                 source ? fmt::format(" ({} of them hone's source transformations of {} loop nests: "
                                                      "`hone kernel profile` says what each admits)",
                                                      source, nests.size())
                                        : "");
        std::cout << fmt::format("build: {} ({:.2f} s)\n  $ {}\n", b.ok ? "ok" : "FAILED", b.seconds,
                                 support::abbreviated(b.command));
        if (out.contains("timed_build"))
          std::cout << fmt::format("timed build: {} ({:.2f} s)\n  $ {}\n", tb.ok ? "ok" : "FAILED", tb.seconds,
                                   support::abbreviated(tb.command));
        if (out.contains("seeds"))
          for (const auto &s : out["seeds"])
            std::cout << fmt::format("seed {}: {} outputs, {}\n", s["seed"].get<uint64_t>(), s["outputs"].get<size_t>(),
                                     seconds(s["seconds"].get<double>()));
        if (out.contains("note"))
          std::cout << "note: " << out["note"].get<std::string>() << "\n";
        if (out.contains("warning"))
          std::cout << "WARNING: " << out["warning"].get<std::string>() << "\n";
        if (out.contains("timing")) {
          const json &t = out["timing"];
          std::cout << fmt::format("timing: median {} over {} runs, 95% CI +-{:.1f}% ({}){}\n",
                                   seconds(t["median_s"].get<double>()), t["repeats"].get<size_t>(),
                                   100 * t["noise"].get<double>(), t["converged"].get<bool>() ? "converged" : "not converged",
                                   t["converged"].get<bool>() ? "" : ": this machine is noisy; speedups under the CI mean nothing");
          std::cout << "timed: " << t["timed"].get<std::string>()
                    << (t.contains("process_median_s")
                            ? fmt::format(" (the whole process: {})", seconds(t["process_median_s"].get<double>()))
                            : "")
                    << "\n";
        }
        for (const auto &p : problems)
          std::cout << "problem: " << p << "\n";
        std::cout << (problems.empty() ? "ok: the project is ready for hone tune --kernel " + opts->dir + "\n" : "");
      }
      return problems.empty() ? kOk : kRejected;
    };
  });
}

namespace {

/// A variant `hone kernel measure` was given: where from, and what became of it.
struct MeasuredVariant {
  std::string source; // "--knob" or the file
  kernel::Variant variant;
  size_t measured = 0; // index into `timed`
  std::string error;   // why it was not measured
};
/// A distinct variant that built and validated, and its times.
struct TimedVariant {
  const kernel::Variant *variant;
  std::string exe, dir;
  std::vector<double> samples;
};

/// The measurement as `--json` prints it; `allMeasured`: whether every variant was timed.
json measuredJson(const kernel::Manifest &m, const std::vector<MeasuredVariant> &entries,
                  const std::vector<TimedVariant> &timed, const std::vector<double> &refSamples,
                  const std::vector<uint64_t> &seeds, int rounds, bool *allMeasured) {
  kernel::Timing tr = kernel::summarize(refSamples, m.timing.targetCi);
  auto ci = [](double x) { return std::isfinite(x) ? x : -1.0; };
  json out{
      {"project", m.name}, {"seeds", seeds}, {"rounds", rounds}, {"validated", true}, {"timed", kernel::timedWhat(m)}};
  out["reference"] = {{"median_s", tr.median}, {"ci95_s", ci(tr.ci95)}, {"samples", refSamples}};
  out["variants"] = json::array();
  *allMeasured = true;
  for (const auto &e : entries) {
    json j{{"source", e.source}, {"knobs", e.variant.knobs}};
    if (!e.error.empty()) {
      *allMeasured = false;
      j["error"] = e.error;
      out["variants"].push_back(j);
      continue;
    }
    const TimedVariant &t = timed[e.measured];
    std::vector<double> ratios;
    for (size_t i = 0; i < refSamples.size(); ++i)
      ratios.push_back(refSamples[i] / t.samples[i]);
    kernel::Timing tv = kernel::summarize(t.samples, m.timing.targetCi);
    kernel::Timing sp = kernel::summarize(ratios, 1);
    j["median_s"] = tv.median;
    j["ci95_s"] = ci(tv.ci95);
    j["samples"] = t.samples;
    j["speedup"] = {{"median", sp.median}, {"ci95", ci(sp.ci95)}};
    out["variants"].push_back(j);
  }
  if (entries.size() == 1) { // one variant: its figures at the top level too
    const json &only = out["variants"][0];
    out["knobs"] = only["knobs"];
    out["variant"] = {{"median_s", only["median_s"]}, {"ci95_s", only["ci95_s"]}, {"samples", only["samples"]}};
    out["speedup"] = only["speedup"];
  }
  return out;
}

/// The measurement for people.
void printMeasured(const kernel::Manifest &m, const json &out, const std::vector<uint64_t> &seeds) {
  std::cout << fmt::format("{}: validated on seeds {} ({} tolerance); median of {} interleaved rounds; timed: {}\n",
                           m.name, fmt::join(seeds, ", "), kernel::toString(m.output.tolerance),
                           out["reference"]["samples"].size(), kernel::timedWhat(m));
  std::cout << fmt::format("{:<12} {:>10}\n", "reference", seconds(out["reference"]["median_s"].get<double>()));
  for (const auto &j : out["variants"]) {
    std::string name = j["source"].get<std::string>();
    if (j.contains("error")) {
      std::cout << fmt::format("{:<12} not measured: see above\n", name);
      continue;
    }
    double half = j["speedup"]["ci95"].get<double>();
    std::cout << fmt::format("{:<12} {:>10}  speedup {:.3f}x{}\n", name, seconds(j["median_s"].get<double>()),
                             j["speedup"]["median"].get<double>(),
                             half >= 0 ? fmt::format(" +- {:.3f} (95% CI over rounds)", half) : "");
  }
}

} // namespace

void addMeasure(CLI::App &parent, Action &action) {
  struct Options {
    std::string dir;
    std::vector<std::string> knobs, variants;
    bool json = false;
    int rounds = 5;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = parent.add_subcommand("measure", "Validate variants and time them against the unmodified project, "
                                               "interleaved in one run");
  cmd->add_option("dir", opts->dir, "Project folder (or its hone.toml)")->required();
  cmd->add_option("--knob", opts->knobs, "NAME=VALUE (repeatable): one variant; none (and no --variant): the "
                                         "reference against itself");
  cmd->add_option("--variant", opts->variants,
                  "A variant's file (repeatable): the variant.toml that hone tune --kernel --out writes, or any "
                  "[knobs]/[files] text; all are measured side by side");
  cmd->add_option("--rounds", opts->rounds, "Interleaved rounds (the reference and each variant once a round)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      int failure = kUsage;
      auto loaded = projectAndVariant(opts->dir, opts->knobs, &failure);
      if (!loaded)
        return failure;
      kernel::Manifest *m = &loaded->first;
      // The variants, in the order given: --knob's first (when given, or when nothing else is).
      std::vector<MeasuredVariant> entries;
      if (!opts->knobs.empty() || opts->variants.empty())
        entries.push_back({"--knob", loaded->second, 0, ""});
      for (const auto &file : opts->variants) {
        auto text = support::readFile(file);
        if (!text) {
          std::cerr << "hone: --variant " << file << ": " << text.error().message << "\n";
          return kUsage;
        }
        auto v = kernel::parseVariant(*m, *text);
        if (!v) {
          std::cerr << "hone: --variant " << file << ": " << v.error().message << "\n";
          return exitCodeOf(v.error());
        }
        entries.push_back({file, std::move(*v), 0, ""});
      }
      kernel::EvaluatorSettings es;
      es.workdir = scratch(*m, "measure");
      es.profile = false;
      kernel::KernelEvaluator ev(*m, es);
      if (auto ok = ev.prepare(); !ok) {
        std::cerr << "hone: " << ok.error().message << "\n";
        return kRejected;
      }
      // Each distinct variant is built and validated once (two files of the same variant share it).
      std::vector<TimedVariant> timed;
      std::map<std::string, size_t> byText;
      for (auto &e : entries) {
        std::string text = kernel::renderVariant(e.variant);
        if (auto it = byText.find(text); it != byText.end()) {
          e.measured = it->second;
          continue;
        }
        std::string vdir = scratch(*m, fmt::format("measure/variant-{}", timed.size()));
        kernel::BuildResult b = kernel::buildValidated(*m, e.variant, vdir);
        if (!b.ok)
          e.error = fmt::format("does not build ({}):\n{}", b.error, kernel::firstCompilerErrors(b.log));
        else if (auto bad = ev.validate(e.variant, b.exe, vdir, ev.seeds()))
          e.error = fmt::format("is {}: {}", engine::toString(bad->status), bad->error);
        else if (b = kernel::buildTimed(*m, e.variant, vdir, b); !b.ok)
          e.error = fmt::format("does not build for timing ({}):\n{}", b.error, kernel::firstCompilerErrors(b.log));
        if (!e.error.empty()) {
          std::cerr << "hone: the variant of " << e.source << " " << e.error << "\n";
          continue;
        }
        byText[text] = e.measured = timed.size();
        timed.push_back({&e.variant, b.exe, vdir, {}});
      }
      if (timed.empty())
        return kRejected;
      kernel::Variant ref = kernel::referenceVariant(*m);
      std::string refDir = scratch(*m, "measure/ref");
      kernel::BuildResult rb = kernel::buildValidated(*m, ref, refDir);
      if (rb.ok)
        rb = kernel::buildTimed(*m, ref, refDir, rb);
      if (!rb.ok) {
        std::cerr << "hone: the reference does not build (" << rb.error << ")\n";
        return kRejected;
      }
      // Interleaved rounds, the reference and every variant once each (KernelEvaluator::interleaved).
      std::vector<kernel::KernelEvaluator::Contender> contenders;
      for (const auto &t : timed)
        contenders.push_back({t.variant, t.exe, t.dir});
      contenders.push_back({&ref, rb.exe, refDir});
      auto samples = ev.interleaved(contenders, opts->rounds);
      if (!samples) {
        std::cerr << "hone: timing failed: " << samples.error().message << "\n";
        return kRejected;
      }
      for (size_t i = 0; i < timed.size(); ++i)
        timed[i].samples = (*samples)[i];
      std::vector<double> refSamples = samples->back();
      bool allMeasured = true;
      json out = measuredJson(*m, entries, timed, refSamples, ev.seeds(), opts->rounds, &allMeasured);
      if (opts->json)
        std::cout << out.dump(2) << "\n";
      else
        printMeasured(*m, out, ev.seeds());
      return allMeasured ? kOk : kRejected;
    };
  });
}

void addProfile(CLI::App &parent, Action &action) {
  struct Options {
    std::string dir, ncu;
    std::vector<std::string> knobs, rules;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = parent.add_subcommand("profile", "Profile a variant, diagnose it, and rank the transformations "
                                               "that address the findings");
  cmd->add_option("dir", opts->dir, "Project folder (or its hone.toml)")->required();
  cmd->add_option("--knob", opts->knobs, "NAME=VALUE (repeatable): the variant; none: the reference");
  cmd->add_option("--ncu", opts->ncu, "An Nsight Compute CSV report (ncu --csv --page details|raw) to include");
  cmd->add_option("--rules", opts->rules, "Extra AutoGuide rule files (TOML)");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      int failure = kUsage;
      auto loaded = projectAndVariant(opts->dir, opts->knobs, &failure);
      if (!loaded)
        return failure;
      kernel::Manifest *m = &loaded->first;
      kernel::Variant *v = &loaded->second;
      auto guide = autoguide::AutoGuide::withDefaults(opts->rules);
      auto catalogue = kernel::loadCatalogue();
      if (!guide || !catalogue) {
        std::cerr << "hone: " << (!guide ? guide.error().message : catalogue.error().message) << "\n";
        return kUsage;
      }
      kernel::ProfileOptions po;
      po.ncuReport = opts->ncu;
      po.seed = m->seeds.front();
      kernel::KernelProfile p = kernel::profileVariant(*m, *v, scratch(*m, "profile"), po);
      kernel::Diagnosis typed = kernel::diagnosis(p);
      auto findings = guide->interpret("", typed.evidence, kernel::kDomainName);
      json diagnosis = kernel::toJson(typed);
      // Transformations ranked by the largest share of the findings that call for them.
      std::map<std::string, std::pair<double, std::vector<std::string>>> ranked;
      for (const auto &f : findings) {
        double share = f.subject ? f.subject->share : 0.0;
        for (const auto &t : f.transformations) {
          auto &slot = ranked[t];
          slot.first = std::max(slot.first, share);
          slot.second.push_back(f.rule);
        }
      }
      std::vector<std::pair<std::string, double>> order;
      for (const auto &[id, r] : ranked)
        order.push_back({id, r.first});
      std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
      auto entry = [&](const std::string &id) -> const kernel::Transformation * {
        for (const auto &t : *catalogue)
          if (t.id == id)
            return &t;
        return nullptr;
      };
      if (opts->json) {
        json out{{"project", m->name}, {"knobs", v->knobs}, {"profile", kernel::toJson(p)}, {"diagnosis", diagnosis}};
        if (m->plan && p.cachegrind)
          out["nests"] = kernel::nestHeat(*m, *p.cachegrind, p.breakdown ? &*p.breakdown : nullptr);
        out["findings"] = json::array();
        for (const auto &f : findings) {
          json subject; // the finding says its kind and detail itself
          if (f.subject) {
            subject = support::toJson(*f.subject);
            subject.erase("kind");
            subject.erase("detail");
          }
          out["findings"].push_back({{"rule", f.rule}, {"severity", f.severity}, {"evidence", f.evidence},
                                     {"explanation", f.explanation}, {"suggestion", f.suggestion},
                                     {"transformations", f.transformations}, {"subject", subject}});
        }
        out["transformations"] = json::array();
        for (const auto &[id, share] : order)
          if (const auto *t = entry(id))
            out["transformations"].push_back({{"id", id}, {"name", t->name}, {"share", share},
                                              {"reference", t->reference}, {"risk", t->risk},
                                              {"because", ranked[id].second}});
        std::cout << out.dump(2) << "\n";
        return kOk;
      }
      std::cout << fmt::format("{}: profiled with {}\n", m->name, p.tools.empty() ? "nothing" : fmt::format("{}", fmt::join(p.tools, ", ")));
      for (const auto &s : p.skipped)
        std::cout << "  skipped: " << s << "\n";
      for (const auto &s : p.notes)
        std::cout << "  note: " << s << "\n";
      if (std::string b = kernel::breakdownText(diagnosis.value("breakdown", json()), diagnosis.value("cold", json()), 12);
          !b.empty())
        std::cout << "\n" << b;
      if (p.cachegrind) {
        std::cout << "\nhot lines (cachegrind):\n";
        double total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
        for (size_t i = 0; i < p.cachegrind->lines.size() && i < 5; ++i) {
          const auto &c = p.cachegrind->lines[i];
          auto ev = [&](const char *e) { return c.events.count(e) ? c.events.at(e) : 0.0; };
          double refs = ev("Dr") + ev("Dw");
          std::cout << fmt::format("  {:>5.1f}% Ir  {}:{} ({})  D1 miss {:.1f}%\n", total > 0 ? 100 * ev("Ir") / total : 0,
                                   c.file, c.line, c.function, refs > 0 ? 100 * (ev("D1mr") + ev("D1mw")) / refs : 0);
        }
      }
      if (!p.occupancy.empty()) { // the static occupancy: which limit binds on each architecture
        std::cout << "\noccupancy (ptxas and the launch; the Occupancy Calculator's rules, no GPU needed):\n";
        for (const auto &o : p.occupancy) {
          std::cout << "  " << o.text << (o.launch.empty() ? "" : fmt::format(" [launch: {}]", o.launch)) << "\n";
          if (o.unknown.empty() && !o.occupancy.limiting.empty()) {
            std::vector<std::string> limits;
            for (auto l : o.occupancy.limiting)
              limits.emplace_back(kernel::toString(l));
            std::cout << fmt::format("      binding limit: {}; blocks per SM allowed by warps {}, registers {}, "
                                     "shared memory {}, the SM {}\n",
                                     fmt::join(limits, " and "), o.occupancy.byWarps, o.occupancy.byRegisters,
                                     o.occupancy.byShared == INT_MAX ? std::string("any") : std::to_string(o.occupancy.byShared),
                                     o.occupancy.byBlocks);
          }
          for (const auto &[knob, values] : o.prefer)
            std::cout << fmt::format("      {} = {} would raise it\n", knob, fmt::join(values, " or "));
        }
      }
      if (m->plan) { // the source model: what hone itself can do to each nest, hottest first
        std::map<std::string, double> shares;
        if (p.cachegrind) {
          double total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
          for (const auto &c : p.cachegrind->lines)
            if (total > 0 && c.events.count("Ir"))
              shares[fmt::format("{}:{}", c.file, c.line)] += c.events.at("Ir") / total;
        }
        std::cout << "\nloop nests (hone's source model; knobs named FILE:LINE.ACTION):\n";
        for (const auto &w : m->plan->program().warnings)
          std::cout << "  warning: " << w << "\n";
        std::string text = m->plan->describe(shares);
        std::cout << (text.empty() ? "  none: no loop nest hone can transform\n" : text);
      }
      std::cout << "\nfindings:\n";
      if (findings.empty())
        std::cout << "  none above the thresholds (docs/KERNELS.md)\n";
      for (const auto &f : findings)
        std::cout << fmt::format("  [{}] {}\n      {}\n", f.rule, f.explanation.empty() ? f.evidence : f.explanation,
                                 f.suggestion);
      std::cout << "\ntransformations, by the time they could save:\n";
      for (const auto &[id, share] : order)
        if (const auto *t = entry(id))
          std::cout << fmt::format("  {:>4.0f}%  {} -- {}\n         ({}; risk: {})\n", 100 * share, t->name, t->effect,
                                   t->reference, t->risk);
      return kOk;
    };
  });
}

} // namespace

void addKernelCommand(CLI::App &app, Action &action) {
  auto *cmd = app.add_subcommand("kernel", "Kernel projects: init a manifest, check, measure and profile (docs/KERNELS.md)");
  cmd->require_subcommand(1);
  addInit(*cmd, action);
  addCheck(*cmd, action);
  addMeasure(*cmd, action);
  addProfile(*cmd, action);
}

} // namespace hone::cli
