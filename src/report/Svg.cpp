#include "report/Svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hone::report {

std::string escapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default:
      // Control characters other than tab and newline are not allowed in XML.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
        out += "\xEF\xBF\xBD"; // U+FFFD
      else
        out += c;
    }
  }
  return out;
}

std::string paletteColor(size_t i) {
  static const char *kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return kColors[i % (sizeof kColors / sizeof *kColors)];
}

Series bestSoFarSeries(const RunView &run, std::string label, std::string color) {
  Series s;
  s.label = std::move(label);
  s.run = run.info.id;
  s.color = std::move(color);
  double previous = 0;
  for (size_t i = 0; i < run.bestSoFar.size(); ++i) {
    double v = run.bestSoFar[i];
    if (!(v > 0) || !std::isfinite(v))
      continue;
    s.points.emplace_back(static_cast<double>(i + 1), v);
    s.steps.push_back(run.steps[i].sequence);
    s.improved.push_back(v > previous);
    previous = v;
  }
  return s;
}

namespace {

/// Tick marks over [lo, hi]: multiples of 1, 2 or 5 times a power of ten, about `count` of them.
std::vector<double> ticks(double lo, double hi, int count) {
  double span = hi - lo;
  if (!(span > 0))
    return {lo};
  double raw = span / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && out.size() < 50; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

} // namespace

std::string curveSvg(const std::vector<Series> &series, const PlotOptions &o) {
  // The legend goes below the plot, a row per series: the figure grows by its height.
  const double left = 64, right = 16, top = o.title.empty() ? 16 : 36, bottom = 48;
  const double legend = series.empty() ? 0 : 8 + 16.0 * static_cast<double>(series.size());
  const double w = o.width, pw = w - left - right, ph = o.height - top - bottom, h = o.height + legend;
  double xMax = 2, yLo = INFINITY, yHi = -INFINITY;
  for (const auto &s : series)
    for (const auto &[x, y] : s.points) {
      xMax = std::max(xMax, x);
      yLo = std::min(yLo, y);
      yHi = std::max(yHi, y);
    }
  if (o.reference) {
    yLo = std::min(yLo, *o.reference);
    yHi = std::max(yHi, *o.reference);
  }
  if (!std::isfinite(yLo)) { // nothing to draw
    yLo = 0;
    yHi = 1;
  }
  double pad = (yHi - yLo) * 0.08;
  if (!(pad > 0))
    pad = std::max(std::abs(yHi) * 0.1, 0.1);
  yLo = std::max(0.0, yLo - pad);
  yHi += pad;
  auto X = [&](double x) { return left + (x - 1) / (xMax - 1) * pw; };
  auto Y = [&](double y) { return top + (1 - (y - yLo) / (yHi - yLo)) * ph; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"hone-curve\" width=\"{0}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"{2}\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1:.0f}\" fill=\"#fff\"/>\n",
      o.width, h, escapeXml(o.title.empty() ? "best score so far" : o.title));
  if (!o.title.empty())
    out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", left,
                       escapeXml(o.title));
  // Axes and grid.
  out += "<g class=\"axes\" stroke=\"#ccc\">\n";
  for (double t : ticks(yLo, yHi, 5))
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/><text x=\"{3}\" y=\"{4:.1f}\" "
                       "text-anchor=\"end\" stroke=\"none\" fill=\"#333\">{5}</text>\n",
                       left, left + pw, Y(t), left - 6, Y(t) + 4, number(t));
  for (double t : ticks(1, xMax, 8))
    if (t >= 1 && t == std::floor(t)) // evaluations are whole
      out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/><text x=\"{0:.1f}\" y=\"{3}\" "
                         "text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">{4}</text>\n",
                         X(t), top, top + ph, top + ph + 16, number(t));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n</g>\n", left,
                     top, pw, ph);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n", left + pw / 2,
                     top + ph + 36, escapeXml(o.xLabel));
  out += fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\" "
                     "fill=\"#333\">{}</text>\n",
                     top + ph / 2, escapeXml(o.yLabel));
  if (o.reference)
    out += fmt::format("<g class=\"reference\" data-value=\"{2}\"><line x1=\"{0}\" x2=\"{1}\" y1=\"{3:.1f}\" "
                       "y2=\"{3:.1f}\" stroke=\"#000\" stroke-dasharray=\"6 4\"/><text x=\"{4}\" y=\"{5:.1f}\" "
                       "text-anchor=\"end\" fill=\"#000\">{6}</text></g>\n",
                       left, left + pw, number(*o.reference), Y(*o.reference), left + pw - 4, Y(*o.reference) - 4,
                       escapeXml(o.referenceLabel));
  // The series: a step line (the best holds until the next improvement) and every point.
  for (const auto &s : series) {
    out += fmt::format("<g class=\"series\" data-run=\"{}\" data-label=\"{}\">\n", s.run, escapeXml(s.label));
    if (!s.points.empty()) {
      std::string path;
      for (size_t i = 0; i < s.points.size(); ++i) {
        auto [x, y] = s.points[i];
        path += i == 0 ? fmt::format("M{:.1f},{:.1f}", X(x), Y(y))
                       : fmt::format(" H{:.1f} V{:.1f}", X(x), Y(y));
      }
      path += fmt::format(" H{:.1f}", X(xMax));
      out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, s.color);
    }
    for (size_t i = 0; i < s.points.size(); ++i) {
      auto [x, y] = s.points[i];
      out += fmt::format("<circle class=\"point{}\" data-run=\"{}\" data-step=\"{}\" data-evaluation=\"{}\" "
                         "data-value=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{}: evaluation "
                         "{}, best {}</title></circle>\n",
                         s.improved[i] ? " improved" : "", s.run, s.steps[i], number(x), fmt::format("{:.17g}", y),
                         X(x), Y(y), s.improved[i] ? 3.5 : 1.5, s.color, escapeXml(s.label), number(x), number(y));
    }
    out += "</g>\n";
  }
  // The legend, below the plot.
  double ly = top + ph + bottom + 8;
  for (const auto &s : series) {
    out += fmt::format("<g class=\"legend\"><line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
                       "stroke-width=\"3\"/><text x=\"{4}\" y=\"{5:.1f}\" fill=\"#222\">{6}</text></g>\n",
                       left, left + 20, ly, s.color, left + 26, ly + 4,
                       escapeXml(s.points.empty() ? s.label + " (no successful step)" : s.label));
    ly += 16;
  }
  out += "</svg>\n";
  return out;
}

} // namespace hone::report
