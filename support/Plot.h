// Plot.h - line and scatter plots written by gnuplot (the tuner's best cycles against trials,
// issue 16; a sweep's Pareto front and sensitivities, issue 17).
//
// The plot is drawn by running the `gnuplot` program (Debian's gnuplot-nox) on a script written
// to a temporary file, the data inline as gnuplot datablocks; nothing is linked, so support keeps
// no library dependency and the program is only needed when a plot is asked for. The format
// follows the path's extension: .png (pngcairo, or png where gnuplot lacks cairo) or .svg.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace npuc {

struct Series {
  std::string name;                          // the legend entry
  std::vector<std::pair<double, double>> xy; // points, drawn in this order
};

struct ScatterPoint {
  double x = 0, y = 0, c = 0; // c: the colour scale's value
};
/// How a scatter series is drawn.
enum class ScatterStyle {
  Palette,     // filled points coloured by c on the palette
  Rings,       // black rings (a Pareto front drawn over the points it was chosen from)
  RingsJoined, // black rings joined by a line in the given order (a front's staircase)
  Line,        // a line only, in the given order (a roofline)
};
struct ScatterSeries {
  std::string name;
  std::vector<ScatterPoint> points;
  ScatterStyle style = ScatterStyle::Palette;
};
struct ScatterPlot {
  std::string title, xlabel, ylabel, colorLabel;
  bool logX = false, logY = false;
  std::vector<ScatterSeries> series;
};

/// Writes a scatter plot to `path` (.png or .svg), with the same contract as plotLines; a
/// point a log axis cannot show (<= 0) is an error too.
void plotScatter(const std::string &path, const ScatterPlot &plot);

/// Writes a plot of `series` as lines to `path` (.png or .svg). Throws npuc::Error naming the path
/// for another extension, no finite point to draw, a missing `gnuplot` program, or gnuplot
/// failing (with what it printed). The plot is written to a temporary name beside `path` and
/// renamed, so a failure leaves no partial file; the temporary script is always removed.
void plotLines(const std::string &path, const std::string &title, const std::string &xlabel,
               const std::string &ylabel, const std::vector<Series> &series);

} // namespace npuc
