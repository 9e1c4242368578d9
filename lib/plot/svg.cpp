// svg.h implementation. Covered by tests/plot/plot_test.cpp.
#include "plot/svg.h"

#include <cmath>
#include <cstdio>

namespace moe::plot {
namespace {
std::string attrs_text(const Attrs& attrs) {
  std::string s;
  for (const auto& [k, v] : attrs) s += " " + k + "=\"" + xml_escape(v) + "\"";
  return s;
}
}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string coord(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {}

void Svg::rect(double x, double y, double w, double h, const std::string& fill, const Attrs& attrs) {
  body_ += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" + coord(h) +
           "\" fill=\"" + fill + "\"" + attrs_text(attrs) + "/>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width) {
  body_ += "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) +
           "\" stroke=\"" + stroke + "\" stroke-width=\"" + coord(width) + "\"/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, const Attrs& attrs) {
  std::string p;
  for (const auto& [x, y] : points) p += (p.empty() ? "" : " ") + coord(x) + "," + coord(y);
  body_ += "<polyline points=\"" + p + "\" fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"1.5\"" +
           attrs_text(attrs) + "/>\n";
}

void Svg::circle(double cx, double cy, double r, const std::string& fill, const Attrs& attrs) {
  body_ += "<circle cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) + "\" r=\"" + coord(r) + "\" fill=\"" + fill + "\"" +
           attrs_text(attrs) + "/>\n";
}

void Svg::text(double x, double y, const std::string& s, double size, const std::string& anchor, const Attrs& attrs,
               double rotate) {
  std::string t = "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" font-size=\"" + coord(size) +
                  "\" text-anchor=\"" + anchor + "\"";
  if (rotate != 0) t += " transform=\"rotate(" + coord(rotate) + " " + coord(x) + " " + coord(y) + ")\"";
  body_ += t + attrs_text(attrs) + ">" + xml_escape(s) + "</text>\n";
}

std::string Svg::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         coord(width_) + "\" height=\"" + coord(height_) + "\" viewBox=\"0 0 " + coord(width_) + " " +
         coord(height_) + "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         body_ + "</svg>\n";
}

}  // namespace moe::plot
