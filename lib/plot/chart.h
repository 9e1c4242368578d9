// Line charts and heatmaps for moe-plot, drawn into an Svg: a panel with axes, "nice" ticks (1, 2 or
// 5 times a power of ten; whole numbers where every x is whole, such as updates), axis labels and one
// polyline per series (class "series", data-run and data-metric attributes) with a marker per point
// (class "marker") when the series has few points, so a single validation still shows; a degenerate
// range (one value) is widened by 5% of its magnitude on each side. A heatmap of rows of cells (class
// "cell", data-row, data-col, data-value) with a colour scale (class "scale") labelled with its values.
// Covered by tests/plot/plot_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "plot/svg.h"

namespace moe::plot {

/// Ticks covering [lo, hi] at a round step of at least `min_step`, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5, double min_step = 0);
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
/// The colour scale is drawn under the rows (heatmap_height() gives the total height).
void heatmap(Svg& svg, double x, double y, double cell, const std::vector<HeatRow>& rows, double scale_max,
             const std::string& col_label);
double heatmap_height(size_t rows, double cell);

}  // namespace moe::plot
