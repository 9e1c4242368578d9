// Line charts and heatmaps for moe-plot, drawn into an Svg: a panel with axes, "nice" ticks (1, 2 or
// 5 times a power of ten), axis labels and one polyline per series (class "series", data-run and
// data-metric attributes); a heatmap of rows of cells (class "cell", data-row, data-col, data-value)
// with a colour scale. Covered by tests/plot/plot_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "plot/svg.h"

namespace moe::plot {

/// Ticks covering [lo, hi] at a round step, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);
/// The i-th colour of the series palette.
std::string palette(size_t i);

struct Series {
  std::string run, metric, color;
  std::vector<std::pair<double, double>> xy;
};

/// A line chart in the box (x, y, w, h) of `svg`; an empty series list draws the axes and "no data".
void line_panel(Svg& svg, double x, double y, double w, double h, const std::string& title, const std::string& x_label,
                const std::vector<Series>& series);

struct HeatRow {
  std::string label;
  std::vector<double> values;  // in [0, 1]
  std::string note;            // printed at the right of the row
};

/// Rows of cells (darker = larger), one column per value; `scale_max` is the value of the darkest colour.
void heatmap(Svg& svg, double x, double y, double cell, const std::vector<HeatRow>& rows, double scale_max,
             const std::string& col_label);

}  // namespace moe::plot
