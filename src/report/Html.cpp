#include "report/Html.h"

#include "report/Svg.h"
#include "support/Diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace hone::report {

using nlohmann::json;

std::vector<RunGroup> groupRuns(const std::vector<RunView> &runs) {
  std::vector<RunGroup> groups;
  for (const auto &r : runs) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const RunGroup &g) {
      return g.domain == r.info.domain && g.app == r.info.app && g.machine == r.info.machine;
    });
    if (it == groups.end()) {
      groups.push_back({r.info.domain, r.info.app, r.info.machine, {}});
      it = groups.end() - 1;
    }
    it->runs.push_back(&r);
  }
  return groups;
}

std::string runLabel(const RunView &run) {
  return fmt::format("run {}: {} (seed {})", run.info.id, run.info.agent, run.info.seed);
}

std::string groupSvg(const RunGroup &group, int width, int height) {
  std::vector<Series> series;
  bool relative = false;
  std::string referenceLabel;
  for (size_t i = 0; i < group.runs.size(); ++i) {
    const RunView &r = *group.runs[i];
    series.push_back(bestSoFarSeries(r, runLabel(r), paletteColor(i)));
    if (r.baseline() > 0) {
      relative = true;
      referenceLabel = r.baselineLabel();
    }
  }
  PlotOptions o;
  o.title = fmt::format("{} on {}", group.app, group.machine);
  o.width = width;
  o.height = height;
  if (relative) {
    o.reference = 1.0;
    o.referenceLabel = fmt::format("1.0 = {}", firstLine(referenceLabel, 80));
    o.yLabel = fmt::format("best {} so far", group.runs.front()->scoreName());
  }
  return curveSvg(series, o);
}

namespace {

std::string e(std::string_view text) { return escapeXml(text); }

std::string scoreCell(const RunView &r, double score) { return e(store::scoreText(score, r.baseline())); }

const char *kStyle = R"css(
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; white-space: nowrap; }
tr.best td { background: #eef7ee; } tr.failed td { color: #933; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; }
td pre { background: none; padding: 0; margin: 0; }
details { margin: 0.5em 0 1em; } summary { cursor: pointer; font-weight: bold; }
.diff .add { color: #075; } .diff .del { color: #a00; } .muted { color: #777; }
)css";

/// A unified diff with its added and removed lines marked (escaped line by line).
std::string diffHtml(const std::string &diff) {
  std::string out = "<pre class=\"diff\">";
  for (const auto &line : support::splitLines(diff)) {
    const char *cls = !line.empty() && line[0] == '+' && line.rfind("+++", 0) != 0   ? "add"
                      : !line.empty() && line[0] == '-' && line.rfind("---", 0) != 0 ? "del"
                                                                                      : nullptr;
    out += cls ? fmt::format("<span class=\"{}\">{}</span>\n", cls, e(line)) : e(line) + "\n";
  }
  return out + "</pre>\n";
}

std::string failuresText(const RunView &r) {
  std::string out;
  for (const auto &[status, n] : r.byStatus)
    if (status != "ok")
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, status);
  return out.empty() ? "none" : out;
}

std::string summaryTable(const RunGroup &g) {
  std::string out = "<table class=\"summary\">\n<tr><th>run</th><th>agent</th><th>seed</th><th>status</th>"
                    "<th>best</th><th>at step</th><th>evaluations</th><th>failures by kind</th><th>tokens</th>"
                    "<th>cost</th></tr>\n";
  for (const RunView *r : g.runs)
    out += fmt::format("<tr data-run=\"{0}\"><td><a href=\"#run-{0}\">{0}</a></td><td>{1}</td><td class=\"num\">{2}</td>"
                       "<td>{3}</td><td class=\"num best-score\">{4}</td><td class=\"num\">{5}</td>"
                       "<td class=\"num\">{6} of {7}</td><td>{8}</td><td class=\"num\">{9}</td>"
                       "<td class=\"num\">{10:.4f}</td></tr>\n",
                       r->info.id, e(r->info.agent), r->info.seed, e(r->info.status),
                       r->best ? scoreCell(*r, r->bestScore) : "-", r->best ? std::to_string(*r->best) : "-",
                       r->steps.size(), r->iterations(), e(failuresText(*r)),
                       r->usage.promptTokens + r->usage.completionTokens, r->usage.cost);
  return out + "</table>\n";
}

/// The profile's top findings: the bottlenecks of the latest profiled step up to the best; and the
/// steps whose stored evidence this hone cannot read, said once.
std::string findingsHtml(const RunView &r) {
  std::string out;
  size_t unread = 0;
  const store::StepRecord *first = nullptr;
  for (const auto &s : r.steps)
    if (!s.evidenceProblem.empty() && unread++ == 0)
      first = &s;
  if (first)
    out += fmt::format("<p>The evidence of {} step{} could not be read and is left out ({}).</p>\n", unread,
                       unread == 1 ? "" : "s", e(first->evidenceProblem));
  if (!r.best)
    return out;
  for (size_t i = *r.best + 1; i-- > 0;) {
    const support::Evidence &evidence = r.steps[i].evidence;
    if (evidence.bottlenecks.empty())
      continue;
    out += fmt::format("<p>Top findings of the profile of step {}:</p>\n<table class=\"findings\">"
                       "<tr><th>kind</th><th>resource</th><th>share</th><th>detail</th></tr>\n",
                       r.steps[i].sequence);
    for (size_t k = 0; k < evidence.bottlenecks.size() && k < 5; ++k) {
      const support::Bottleneck &b = evidence.bottlenecks[k];
      out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{:.0f}%</td><td>{}</td></tr>\n", e(b.kind),
                         e(b.subject), b.share * 100, e(b.detail));
    }
    return out + "</table>\n";
  }
  return out;
}

std::string stepsTable(const RunView &r, size_t maxSteps) {
  bool all = maxSteps == 0 || r.steps.size() <= maxSteps;
  std::string out;
  if (!all)
    out += fmt::format("<p class=\"muted\">{} steps: the table lists the first and each that improved the best "
                       "(<code>hone show {} --trajectory</code> lists them all).</p>\n",
                       r.steps.size(), r.info.id);
  out += "<table class=\"steps\">\n<tr><th>step</th><th>status</th><th>score</th><th>best so far</th>"
         "<th>rationale</th><th>feedback the agent saw</th></tr>\n";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const store::StepRecord &s = r.steps[i];
    if (!all && i > 0 && !(r.bestSoFar[i] > r.bestSoFar[i - 1]))
      continue;
    bool ok = s.status == "ok";
    out += fmt::format("<tr data-step=\"{}\" class=\"{}\"><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td>{}</td><td><pre>{}</pre></td></tr>\n",
                       s.sequence, r.best && *r.best == i ? "best" : ok ? "" : "failed", s.sequence, e(s.status),
                       ok ? scoreCell(r, s.score) : "-", r.bestSoFar[i] > 0 ? scoreCell(r, r.bestSoFar[i]) : "-",
                       e(s.rationale), e(feedbackSummary(s)));
  }
  return out + "</table>\n";
}

std::string runSection(const RunView &r, size_t maxSteps) {
  std::string out = fmt::format("<details class=\"run\" id=\"run-{0}\" data-run=\"{0}\"><summary>{1}: {2}, {3} of {4} "
                                "evaluations, best {5}</summary>\n",
                                r.info.id, e(runLabel(r)), e(r.info.status), r.steps.size(),
                                r.iterations(), r.best ? scoreCell(r, r.bestScore) : "-");
  if (!r.baselineLabel().empty())
    out += fmt::format("<p class=\"muted\">Scores relative to {}.</p>\n", e(r.baselineLabel()));
  if (r.best) {
    const store::StepRecord &b = r.steps[*r.best];
    std::string score = r.scoreName();
    if (!score.empty())
      score[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(score[0])));
    std::string what = firstLine(b.rawOutput, 400);
    out += fmt::format("<p>{} of the best {}: <b>{}</b> (step {}){}</p>\n", e(score), e(r.artifactName()),
                       scoreCell(r, b.score), b.sequence, what.empty() ? "." : ": " + e(what));
    out += fmt::format("<p>Over the run: {} of {} candidates evaluated without failing; failures: {}.</p>\n",
                       r.byStatus.count("ok") ? r.byStatus.at("ok") : 0, r.steps.size(), e(failuresText(r)));
    out += findingsHtml(r);
    if (!r.steps.empty() && *r.best != 0) {
      out += fmt::format("<p>From the start (step 0) to the best {} (step {}): {}</p>\n", e(r.artifactName()),
                         b.sequence, e(b.rationale));
      out += diffHtml(support::unifiedDiff(r.steps.front().artifact, b.artifact, "start", "best"));
    } else {
      out += fmt::format("<p>The best {} is the start (step 0).</p>\n", e(r.artifactName()));
    }
    out += fmt::format("<details><summary>the best {}</summary><pre class=\"best-artifact\">{}</pre></details>\n",
                       e(r.artifactName()), e(b.artifact));
  } else {
    out += "<p>No step succeeded.</p>\n";
  }
  out += stepsTable(r, maxSteps);
  return out + "</details>\n";
}

} // namespace

std::string reportHtml(const std::vector<RunView> &runs, const ReportOptions &o) {
  std::string out = fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                                "style-src 'unsafe-inline'; img-src data:\">\n"
                                "<title>{}</title>\n<style>{}</style></head><body>\n<h1>{}</h1>\n",
                                e(o.title), kStyle, e(o.title));
  out += fmt::format("<p class=\"muted\">{} run{} from {}, generated {} by hone.</p>\n", runs.size(),
                     runs.size() == 1 ? "" : "s", e(o.source), e(o.generatedAt));
  if (runs.empty())
    out += "<p>The store has no runs yet (hone tune starts one).</p>\n";
  for (const auto &g : groupRuns(runs)) {
    out += fmt::format("<section class=\"app\" data-app=\"{0}\" data-machine=\"{1}\">\n<h2>{0} on {1} ({2})</h2>\n",
                       e(g.app), e(g.machine), e(g.domain));
    out += "<figure>" + groupSvg(g) + "</figure>\n";
    out += summaryTable(g);
    for (const RunView *r : g.runs)
      out += runSection(*r, o.maxSteps);
    out += "</section>\n";
  }
  return out + "</body></html>\n";
}

} // namespace hone::report
