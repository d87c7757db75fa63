#include "mapping/Calibrate.h"

#include "dsl/Frontend.h"
#include "sim/AppCheck.h"
#include "sim/Simulator.h"
#include "store/Store.h"
#include "support/JsonText.h"
#include "support/SourceFile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

namespace hone::mapping {

support::Expected<std::vector<Observation>> observationsFromStore(store::Store &store, const std::string &app,
                                                                  std::vector<std::string> *notes) {
  std::vector<Observation> out;
  for (const store::RunInfo &run : store.runs()) {
    if (run.domain != "mapping" || run.app != app)
      continue;
    const nlohmann::json options = run.config.contains("options") ? run.config["options"] : nlohmann::json();
    if (support::textOf(options, "evaluator") != "command") {
      continue; // the model's own numbers are no observation of reality
    }
    const nlohmann::json command = options.contains("command") ? options["command"] : nlohmann::json();
    if (command.is_object() && command.value("higher_is_better", false)) {
      if (notes)
        notes->push_back(fmt::format("run {}: its metric is a throughput, not a time; skipped", run.id));
      continue;
    }
    for (const store::StepRecord &s : store.steps(run.id)) {
      double measured = support::numberOf(s.metrics, "metric");
      if (s.status != "ok" || !(measured > 0) || !std::isfinite(measured))
        continue;
      out.push_back({s.artifact, measured, fmt::format("run {} step {}", run.id, s.sequence)});
    }
  }
  if (out.empty())
    return support::Error{fmt::format("the store has no successful real runs of {} (hone tune --app {} --evaluator "
                                      "command ... records them)",
                                      app, app)};
  return out;
}

double spearman(const std::vector<double> &a, const std::vector<double> &b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2)
    return 0;
  auto ranks = [n](const std::vector<double> &v) {
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[idx[j + 1]] == v[idx[i]])
        ++j;
      for (size_t k = i; k <= j; ++k)
        r[idx[k]] = 0.5 * static_cast<double>(i + j);
      i = j + 1;
    }
    return r;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double num = 0, da = 0, db = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (ra[i] - ma) * (rb[i] - mb);
    da += (ra[i] - ma) * (ra[i] - ma);
    db += (rb[i] - mb) * (rb[i] - mb);
  }
  return da > 0 && db > 0 ? num / std::sqrt(da * db) : 0;
}

namespace {

/// The observations' policies, checked once against the app.
struct Checked {
  std::vector<std::unique_ptr<dsl::CheckedSource>> sources;
};

Checked checkAll(const std::vector<Observation> &obs, const model::AppModel &app) {
  Checked c;
  for (const auto &o : obs) {
    auto s = std::make_unique<dsl::CheckedSource>(dsl::checkSource(support::SourceFile("observed.map", o.mapper)));
    if (s->ok())
      sim::checkAgainstApp(s->program, app, *s->diags);
    c.sources.push_back(std::move(s));
  }
  return c;
}

Fidelity predict(const Checked &checked, const std::vector<Observation> &obs, const model::AppModel &app,
                 const model::MachineModel &machine, std::optional<double> size) {
  Fidelity f;
  f.predictedS.assign(obs.size(), NAN);
  auto program = model::instantiate(app, machine, size);
  if (!program)
    return f;
  sim::Context context(machine, *program);
  std::vector<double> p, m, rel;
  for (size_t i = 0; i < obs.size(); ++i) {
    const auto &src = *checked.sources[i];
    if (!src.ok())
      continue;
    sim::Result r = sim::simulate(context, src.program);
    if (!r.ok || !(r.timeS > 0))
      continue;
    f.predictedS[i] = r.timeS;
    p.push_back(r.timeS);
    m.push_back(obs[i].measuredS);
    rel.push_back(std::fabs(r.timeS - obs[i].measuredS) / obs[i].measuredS);
  }
  f.compared = p.size();
  f.spearman = spearman(p, m);
  if (!rel.empty()) {
    std::sort(rel.begin(), rel.end());
    size_t n = rel.size();
    f.medianRelError = n % 2 ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]);
  }
  return f;
}

/// Mean squared log error over the observations in `which` (those the model predicted before any
/// fitting); one it no longer predicts costs as a factor of e^3 would.
double loss(const Fidelity &f, const std::vector<Observation> &obs, const std::vector<size_t> &which) {
  double sum = 0;
  for (size_t i : which) {
    double e = std::isfinite(f.predictedS[i]) ? std::log(f.predictedS[i] / obs[i].measuredS) : 3.0;
    sum += e * e;
  }
  return which.empty() ? 0 : sum / static_cast<double>(which.size());
}

model::MachineModel scaled(const model::MachineModel &m, const double f[4]) {
  model::MachineModel out = m;
  for (auto &p : out.processors) {
    p.gflops *= f[0];
    p.overheadUs *= f[3];
  }
  for (auto &mem : out.memories)
    for (auto &a : mem.access)
      a.bandwidth *= f[1];
  for (auto &c : out.channels)
    c.bandwidth *= f[2];
  out.runtime.taskAnalysisUs *= f[3];
  out.runtime.copyIssueUs *= f[3];
  return out;
}

/// The machine file with each scaled number multiplied, in place (comments and layout kept).
std::string rewrite(const std::string &text, const double f[4]) {
  std::istringstream in(text);
  std::string line, section, out;
  while (std::getline(in, line)) {
    std::string trimmed = line.substr(std::min(line.size(), line.find_first_not_of(" \t")));
    if (!trimmed.empty() && trimmed[0] == '[') {
      std::string head = trimmed.substr(0, trimmed.find('#'));
      section = head.substr(0, head.find_last_of(']') + 1);
    }
    auto key = [&](const char *k) { return trimmed.rfind(k, 0) == 0 && trimmed.find('=') != std::string::npos; };
    double factor = 0;
    if (key("gflops") && section == "[[processor]]")
      factor = f[0];
    else if (key("overhead_us") && section == "[[processor]]")
      factor = f[3];
    else if (key("bandwidth_gbs") && section == "[[memory.access]]")
      factor = f[1];
    else if (key("bandwidth_gbs") && section == "[[channel]]")
      factor = f[2];
    else if ((key("task_analysis_us") || key("copy_issue_us")) && section == "[runtime]")
      factor = f[3];
    if (factor > 0 && factor != 1) {
      size_t eq = line.find('=');
      size_t start = line.find_first_not_of(" \t", eq + 1);
      size_t end = start;
      while (end < line.size() && (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.' ||
                                   line[end] == 'e' || line[end] == 'E' || line[end] == '-' || line[end] == '+'))
        ++end;
      char *stop = nullptr;
      std::string number = line.substr(start, end - start);
      double v = std::strtod(number.c_str(), &stop);
      if (!number.empty() && stop && *stop == '\0') {
        std::string value = fmt::format("{:.4g}", v * factor);
        if (value.find_first_of(".e") == std::string::npos)
          value += ".0";
        line = line.substr(0, start) + value + line.substr(end) +
               fmt::format("  # [calibrated] x{:.3g} by hone model calibrate", factor);
      }
    }
    out += line + "\n";
  }
  return out;
}

} // namespace

Fidelity fidelity(const std::vector<Observation> &obs, const model::AppModel &app, const model::MachineModel &machine,
                  std::optional<double> size) {
  return predict(checkAll(obs, app), obs, app, machine, size);
}

support::Expected<Calibration> calibrate(const std::vector<Observation> &obs, const model::AppModel &app,
                                         const model::MachineModel &machine, const std::string &machineText,
                                         std::optional<double> size) {
  if (obs.size() < 2)
    return support::Error{fmt::format("calibration needs at least 2 observations, got {}", obs.size())};
  auto program = model::instantiate(app, machine, size);
  if (!program)
    return support::Error{program.error().message};
  Checked checked = checkAll(obs, app);
  Calibration c;
  c.before = predict(checked, obs, app, machine, size);
  if (c.before.compared < 2)
    return support::Error{fmt::format("the model predicts only {} of the {} observed mappers; nothing to fit",
                                      c.before.compared, obs.size())};
  std::vector<size_t> predicted;
  for (size_t i = 0; i < obs.size(); ++i)
    if (std::isfinite(c.before.predictedS[i]))
      predicted.push_back(i);
  c.lossBefore = loss(c.before, obs, predicted);
  // Pattern search over the log factors: try +-step on each, keep what lowers the loss, halve the
  // step when nothing does (down to a 1% change). Factors stay within [1/1000, 1000]. A small ridge
  // term keeps a factor the observations do not constrain (a cost no mapper exercises) at 1.
  constexpr double kRidge = 1e-4;
  auto objective = [&](const double t[4]) {
    double f[4], ridge = 0;
    for (int i = 0; i < 4; ++i) {
      f[i] = std::exp(t[i]);
      ridge += kRidge * t[i] * t[i];
    }
    return loss(predict(checked, obs, app, scaled(machine, f), size), obs, predicted) + ridge;
  };
  double theta[4] = {0, 0, 0, 0}, best = c.lossBefore, step = 1.0;
  auto eval = objective;
  for (int round = 0; round < 100 && step > 0.01; ++round) {
    bool improved = false;
    for (int i = 0; i < 4; ++i)
      for (double dir : {1.0, -1.0}) {
        double t[4] = {theta[0], theta[1], theta[2], theta[3]};
        t[i] = std::clamp(t[i] + dir * step, -6.9, 6.9);
        double l = eval(t);
        if (l < best - 1e-12) {
          best = l;
          std::copy(t, t + 4, theta);
          improved = true;
        }
      }
    if (!improved)
      step /= 2;
  }
  double f[4];
  for (int i = 0; i < 4; ++i)
    f[i] = std::exp(theta[i]);
  c.compute = f[0];
  c.memory = f[1];
  c.copies = f[2];
  c.runtime = f[3];
  c.machine = scaled(machine, f);
  c.after = predict(checked, obs, app, c.machine, size);
  c.lossAfter = loss(c.after, obs, predicted);
  c.toml = rewrite(machineText, f);
  return c;
}

} // namespace hone::mapping
