#include "report/RunView.h"

#include <fmt/format.h>

#include <algorithm>

namespace hone::report {

using nlohmann::json;

RunView makeView(store::RunInfo info, std::vector<store::StepRecord> steps, store::RunUsage usage) {
  RunView v;
  v.info = std::move(info);
  v.steps = std::move(steps);
  v.usage = usage;
  double best = 0;
  for (size_t i = 0; i < v.steps.size(); ++i) {
    const store::StepRecord &s = v.steps[i];
    ++v.byStatus[s.status];
    if (s.status != "ok")
      ++v.failures;
    else if (!v.best || s.score > v.bestScore) {
      v.best = i;
      v.bestScore = s.score;
    }
    if (s.status == "ok")
      best = std::max(best, s.score);
    v.bestSoFar.push_back(best);
  }
  return v;
}

support::Expected<std::vector<RunView>> loadRuns(store::Store &store, const std::vector<int64_t> &ids) {
  std::vector<store::RunInfo> infos;
  if (ids.empty())
    infos = store.runs();
  for (int64_t id : ids) {
    auto r = store.run(id);
    if (!r)
      return support::Error{fmt::format("no run {} in the store", id)};
    infos.push_back(std::move(*r));
  }
  std::vector<RunView> out;
  for (auto &info : infos) {
    int64_t id = info.id;
    out.push_back(makeView(std::move(info), store.steps(id), store.runUsage(id)));
  }
  return out;
}

json summaryJson(const RunView &v) {
  const store::RunInfo &r = v.info;
  const store::RunUsage &u = v.usage;
  return {{"id", r.id},
          {"domain", r.domain},
          {"created_at", r.createdAt},
          {"app", r.app},
          {"machine", r.machine},
          {"agent", r.agent},
          {"seed", r.seed},
          {"status", r.status},
          {"iterations", v.iterations()},
          {"evaluations", v.steps.size()},
          {"failures", v.failures},
          {"failures_by_status", [&] {
             json f = json::object();
             for (const auto &[status, n] : v.byStatus)
               if (status != "ok")
                 f[status] = n;
             return f;
           }()},
          {"best_score", v.best ? v.bestScore : 0.0},
          {"best_step", v.best ? json(*v.best) : json()},
          {"score_relative_to", v.baselineLabel()},
          {"tokens", {{"prompt", u.promptTokens}, {"completion", u.completionTokens},
                      {"total", u.promptTokens + u.completionTokens}}},
          {"cost", u.cost},
          {"llm_calls", u.calls}};
}

std::string firstLine(const std::string &text, size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit)
    line = line.substr(0, limit) + "...";
  return line;
}

std::string feedbackSummary(const store::StepRecord &step) {
  std::string out;
  for (const support::Finding &finding : step.feedback.findings)
    out += fmt::format("{}: {}\n", finding.rule.empty() ? "?" : finding.rule, firstLine(finding.evidence));
  if (!step.error.empty())
    out += "error: " + firstLine(step.error) + "\n";
  return out;
}

} // namespace hone::report
