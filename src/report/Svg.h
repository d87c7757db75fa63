// Best-so-far curves as standalone SVG: the figure of `hone plot`, of each app
// in `hone report` and of the live dashboard. Every point carries its run,
// step and value as data attributes, so a reader (or a browser test) can check
// the figure against the store; every text is escaped.
#pragma once

#include "report/RunView.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hone::report {

struct Series {
  std::string label;
  int64_t run = 0;
  std::string color;
  /// (evaluation number from 1, value); increasing x.
  std::vector<std::pair<double, double>> points;
  std::vector<int64_t> steps; // the step of each point
  std::vector<bool> improved; // whether the point improved on the one before
};

struct PlotOptions {
  std::string title;
  std::string xLabel = "evaluations";
  std::string yLabel = "best score so far";
  std::optional<double> reference; // a dashed line (the expert mapper, the unmodified program: 1.0)
  std::string referenceLabel;
  int width = 760, height = 400;
};

/// Text safe inside XML and HTML elements and attribute values.
std::string escapeXml(std::string_view text);

/// The i-th colour of the palette (distinct for the first eight).
std::string paletteColor(size_t i);

/// A run's best score so far after each evaluation (from its first successful one).
Series bestSoFarSeries(const RunView &run, std::string label, std::string color);

/// One figure: the series as step lines with their points, axes with ticks, a legend, the reference.
std::string curveSvg(const std::vector<Series> &series, const PlotOptions &options);

} // namespace hone::report
