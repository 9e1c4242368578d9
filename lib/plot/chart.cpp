// chart.h implementation. Covered by tests/plot/plot_test.cpp.
#include "plot/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace moe::plot {
namespace {
std::string tick_text(double v, double step) {
  char buf[32];
  const double a = std::fabs(v);
  if (v != 0 && (a >= 1e5 || a < 1e-3)) std::snprintf(buf, sizeof buf, "%.1e", v);
  else std::snprintf(buf, sizeof buf, "%.*f", step >= 1 ? 0 : int(std::ceil(-std::log10(step))), v);
  return buf;
}
}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target, double min_step) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = std::max((hi - lo) / std::max(1, target), min_step);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  std::vector<double> t;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) t.push_back(k * step);
  return t;
}

namespace {
/// [lo, hi] widened to a visible range when it is a single value: 5% of its magnitude on each side.
void widen_degenerate(double& lo, double& hi, double min_step) {
  if (hi - lo >= 1e-12 * std::max(1.0, std::fabs(hi))) return;
  const double pad = std::max({min_step, 0.05 * std::fabs(lo), 1e-9});
  lo -= pad, hi += pad;
}

/// The heatmap's colour for t in [0, 1]: white to dark blue.
std::string heat_colour(double t) {
  char fill[16];
  std::snprintf(fill, sizeof fill, "#%02x%02x%02x", int(255 - 225 * t), int(255 - 160 * t), int(255 - 75 * t));
  return fill;
}

constexpr size_t kMarkersUpTo = 30;  // series with at most this many points get a marker per point
}  // namespace

std::string palette(size_t i) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return colours[i % 8];
}

void line_panel(Svg& svg, double x, double y, double w, double h, const std::string& title, const std::string& x_label,
                const std::vector<Series>& series) {
  const double left = x + 58, right = x + w - 10, top = y + 24, bottom = y + h - 36;
  svg.text(x + w / 2, y + 14, title, 12, "middle", {{"class", "panel-title"}});
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : series)
    for (const auto& [a, b] : s.xy) {
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      x0 = std::min(x0, a), x1 = std::max(x1, a), y0 = std::min(y0, b), y1 = std::max(y1, b);
    }
  svg.line(left, bottom, right, bottom, "#444");
  svg.line(left, top, left, bottom, "#444");
  svg.text((left + right) / 2, bottom + 30, x_label, 11, "middle", {{"class", "axis-label"}});
  svg.text(x + 14, (top + bottom) / 2, title, 11, "middle", {{"class", "axis-label"}}, -90);
  if (!std::isfinite(x0)) {
    svg.text((left + right) / 2, (top + bottom) / 2, "no data", 11, "middle");
    return;
  }
  bool whole_x = true;  // updates and epochs: ticks at whole numbers
  for (const Series& s : series)
    for (const auto& p : s.xy) whole_x = whole_x && (!std::isfinite(p.first) || p.first == std::floor(p.first));
  const double x_min_step = whole_x ? 1 : 0;
  widen_degenerate(x0, x1, x_min_step);
  widen_degenerate(y0, y1, 0);
  const std::vector<double> xt = nice_ticks(x0, x1, 5, x_min_step), yt = nice_ticks(y0, y1);
  x0 = std::min(x0, xt.front()), x1 = std::max(x1, xt.back()), y0 = std::min(y0, yt.front()), y1 = std::max(y1, yt.back());
  auto px = [&](double v) { return left + (v - x0) / (x1 - x0) * (right - left); };
  auto py = [&](double v) { return bottom - (v - y0) / (y1 - y0) * (bottom - top); };
  const double xs = xt.size() > 1 ? xt[1] - xt[0] : 1, ys = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double v : xt) {
    svg.line(px(v), bottom, px(v), bottom + 4, "#444");
    svg.text(px(v), bottom + 15, tick_text(v, xs), 9, "middle", {{"class", "tick"}});
  }
  for (double v : yt) {
    svg.line(left - 4, py(v), left, py(v), "#444");
    svg.line(left, py(v), right, py(v), "#eee");
    svg.text(left - 6, py(v) + 3, tick_text(v, ys), 9, "end", {{"class", "tick"}});
  }
  for (const Series& s : series) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [a, b] : s.xy)
      if (std::isfinite(a) && std::isfinite(b)) pts.emplace_back(px(a), py(b));
    if (pts.size() > 1) svg.polyline(pts, s.color, {{"class", "series"}, {"data-run", s.run}, {"data-metric", s.metric}});
    if (pts.size() <= kMarkersUpTo)
      for (const auto& [a, b] : pts) svg.circle(a, b, 2.5, s.color, {{"class", "marker"}, {"data-run", s.run}, {"data-metric", s.metric}});
  }
}

void heatmap(Svg& svg, double x, double y, double cell, const std::vector<HeatRow>& rows, double scale_max,
             const std::string& col_label) {
  const double label_w = 170;
  size_t cols = 0;
  for (const HeatRow& r : rows) cols = std::max(cols, r.values.size());
  for (size_t c = 0; c < cols; ++c)
    if (cols <= 32 || c % 8 == 0) svg.text(x + label_w + (double(c) + 0.5) * cell, y - 4, std::to_string(c), 8, "middle");
  svg.text(x + label_w + double(cols) * cell / 2, y - 16, col_label, 11, "middle", {{"class", "axis-label"}});
  for (size_t r = 0; r < rows.size(); ++r) {
    const double ry = y + double(r) * cell;
    svg.text(x + label_w - 6, ry + cell * 0.7, rows[r].label, 9, "end", {{"class", "row-label"}});
    for (size_t c = 0; c < rows[r].values.size(); ++c) {
      const double v = rows[r].values[c], t = scale_max > 0 ? std::clamp(v / scale_max, 0.0, 1.0) : 0;
      char value[32];
      std::snprintf(value, sizeof value, "%.4f", v);
      svg.rect(x + label_w + double(c) * cell, ry, cell - 1, cell - 1, heat_colour(t),
               {{"class", "cell"}, {"data-row", std::to_string(r)}, {"data-col", std::to_string(c)}, {"data-value", value}});
    }
    svg.text(x + label_w + double(cols) * cell + 6, ry + cell * 0.7, rows[r].note, 9, "start", {{"class", "row-note"}});
  }
  // The colour scale: six swatches from 0 to scale_max, each labelled with its value.
  const double sy = y + double(rows.size()) * cell + 12, sw = 36;
  svg.text(x + label_w - 6, sy + 10, "scale", 9, "end", {{"class", "row-label"}});
  for (int k = 0; k <= 5; ++k) {
    const double t = k / 5.0, v = t * std::max(scale_max, 0.0);
    char value[32], label[32];
    std::snprintf(value, sizeof value, "%.4f", v);
    std::snprintf(label, sizeof label, "%.2f", v);
    svg.rect(x + label_w + k * sw, sy, sw - 1, 12, heat_colour(t), {{"class", "scale"}, {"data-value", value}});
    svg.text(x + label_w + (k + 0.5) * sw, sy + 23, label, 8, "middle", {{"class", "tick"}});
  }
}

double heatmap_height(size_t rows, double cell) { return double(rows) * cell + 40; }

}  // namespace moe::plot
