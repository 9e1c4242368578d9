// A minimal SVG writer for moe-plot: a document of a given size with rectangles, lines, polylines,
// circles and text (escaped), each element optionally carrying a class and data-* attributes so that tests and
// scripts can find series in the picture. Self-contained SVG 1.1, viewable in any browser.
// Covered by tests/plot/plot_test.cpp.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace moe::plot {

/// Attribute list: {"class", "series"}, {"data-run", "base"}, ...
using Attrs = std::vector<std::pair<std::string, std::string>>;

std::string xml_escape(const std::string& s);
/// A number for SVG coordinates: at most two decimals, no exponent.
std::string coord(double v);

class Svg {
 public:
  Svg(double width, double height);
  void rect(double x, double y, double w, double h, const std::string& fill, const Attrs& attrs = {});
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1);
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, const Attrs& attrs);
  void circle(double cx, double cy, double r, const std::string& fill, const Attrs& attrs = {});
  /// anchor: start | middle | end; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 11, const std::string& anchor = "start",
            const Attrs& attrs = {}, double rotate = 0);
  std::string str() const;

 private:
  double width_, height_;
  std::string body_;
};

}  // namespace moe::plot
