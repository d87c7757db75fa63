// `hone report`: one self-contained HTML file (no scripts, no network, inline
// SVG) over runs of a store: per app, the runs' best-so-far curves overlaid
// with the baseline at 1.0 and a summary table; per run, the diff from the
// start to the best candidate, the profile's top findings, and every step
// with its rationale and the feedback the agent saw. Every text from the
// store is escaped: a candidate or reply holding markup shows as text.
#pragma once

#include "report/RunView.h"

#include <string>
#include <vector>

namespace hone::report {

struct ReportOptions {
  std::string title = "hone report";
  std::string source;      // where the runs come from (the store's path)
  std::string generatedAt; // UTC, ISO 8601
  /// A run with more steps lists only those that improved the best (and the first); 0: every step.
  size_t maxSteps = 500;
};

std::string reportHtml(const std::vector<RunView> &runs, const ReportOptions &options);

/// The runs of one subject (app or kernel project) on one machine: one figure.
struct RunGroup {
  std::string domain, app, machine;
  std::vector<const RunView *> runs;
};
std::vector<RunGroup> groupRuns(const std::vector<RunView> &runs);

/// The figure of a group: each run's best score so far, the baseline at 1.0 when scores are relative.
std::string groupSvg(const RunGroup &group, int width = 760, int height = 400);

/// The label of a run in legends: "run 3: guided (seed 1)".
std::string runLabel(const RunView &run);

} // namespace hone::report
