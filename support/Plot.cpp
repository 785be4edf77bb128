// Plot.cpp - plotLines(): a gnuplot script with the data as datablocks, run as a child process.
#include "support/Plot.h"

#include "support/Error.h"
#include "support/File.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace npuc {

namespace {

enum class Format { Png, Svg };

// A gnuplot single-quoted string: only the quote itself is special ('' inside).
std::string quoted(const std::string &s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\n')
      q += ' ';
    else
      q += c == '\'' ? std::string("''") : std::string(1, c);
  }
  return q + "'";
}

std::string header(const std::string &out, Format f, const std::string &title,
                   const std::string &xlabel, const std::string &ylabel) {
  std::string s;
  // pngcairo antialiases; the plain png terminal (libgd) is the fallback some builds have.
  if (f == Format::Png)
    s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,600 } "
         "else { set terminal png size 960,600 }\n";
  else
    s += "set terminal svg size 960,600 dynamic\n";
  s += "set output " + quoted(out) + "\n";
  s += "set title " + quoted(title) + " noenhanced\n";
  s += "set xlabel " + quoted(xlabel) + " noenhanced\n";
  s += "set ylabel " + quoted(ylabel) + " noenhanced\n";
  // The key below the plot (it never hides a line), a margin above and below the data (a flat
  // series is not drawn on the border).
  s += "set grid\nset key below height 1 noenhanced\nset offsets 0, 0, graph 0.05, graph 0.05\n";
  return s;
}

std::string linesScript(const std::string &out, Format f, const std::string &title,
                        const std::string &xlabel, const std::string &ylabel,
                        const std::vector<Series> &series) {
  std::string s = header(out, f, title, xlabel, ylabel);
  std::string plot;
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].xy.empty())
      continue;
    s += fmt::format("$d{} << EOD\n", i);
    for (const auto &[x, y] : series[i].xy)
      s += fmt::format("{:.17g} {:.17g}\n", x, y);
    s += "EOD\n";
    plot += fmt::format("{}$d{} using 1:2 with lines linewidth 2 title {}",
                        plot.empty() ? "" : ", ", i, quoted(series[i].name));
  }
  // Closing the output flushes an SVG before gnuplot exits.
  return s + "plot " + plot + "\nunset output\n";
}

// Runs `gnuplot file`, returning its exit status and what it printed (stdout and stderr).
int runGnuplot(const std::string &path, const std::string &file, std::string &printed) {
  int fds[2];
  if (pipe(fds) != 0)
    fail("plot {}: cannot create a pipe for gnuplot: {}", path, std::strerror(errno));
  posix_spawn_file_actions_t act;
  posix_spawn_file_actions_init(&act);
  posix_spawn_file_actions_addclose(&act, fds[0]);
  posix_spawn_file_actions_adddup2(&act, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&act, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&act, fds[1]);
  std::string prog = "gnuplot";
  char *argv[] = {prog.data(), const_cast<char *>(file.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &act, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&act);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    fail("plot {}: cannot run the program 'gnuplot' ({}); install gnuplot-nox "
         "(scripts/install-deps.sh)",
         path, std::strerror(rc));
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    printed.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string scatterScript(const std::string &out, Format f, const ScatterPlot &p) {
  std::string s = header(out, f, p.title, p.xlabel, p.ylabel);
  s += "set cblabel " + quoted(p.colorLabel) + " noenhanced\nset palette rgb 33,13,10\n";
  if (p.logX)
    s += "set logscale x\n";
  if (p.logY)
    s += "set logscale y\n";
  std::string plot;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const ScatterSeries &ser = p.series[i];
    if (ser.points.empty())
      continue;
    s += fmt::format("$d{} << EOD\n", i);
    for (const ScatterPoint &q : ser.points)
      s += fmt::format("{:.17g} {:.17g} {:.17g}\n", q.x, q.y, q.c);
    s += "EOD\n";
    if (!plot.empty())
      plot += ", ";
    switch (ser.style) {
    case ScatterStyle::Palette:
      plot += fmt::format("$d{} using 1:2:3 with points pt 7 ps 1.2 lc palette title {}", i,
                          quoted(ser.name));
      break;
    case ScatterStyle::Rings:
    case ScatterStyle::RingsJoined:
      plot += fmt::format("$d{} using 1:2 with {} pt 6 ps 2 lw 1.5 lc rgb 'black' title {}", i,
                          ser.style == ScatterStyle::Rings ? "points" : "linespoints",
                          quoted(ser.name));
      break;
    case ScatterStyle::Line:
      plot += fmt::format("$d{} using 1:2 with lines lw 2 lc rgb 'gray30' title {}", i,
                          quoted(ser.name));
      break;
    }
  }
  return s + "plot " + plot + "\nunset output\n";
}

Format formatOf(const std::string &path) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  if (ext == ".png")
    return Format::Png;
  if (ext == ".svg")
    return Format::Svg;
  fail("plot {}: unknown format '{}' (the path must end in .png or .svg)", path, ext);
}

/// Runs the script `makeScript(tmp output, format)` and renames its output to `path`.
void render(const std::string &path,
            const std::function<std::string(const std::string &, Format)> &makeScript);

} // namespace

void plotScatter(const std::string &path, const ScatterPlot &p) {
  formatOf(path);
  bool any = false;
  for (const ScatterSeries &s : p.series)
    for (const ScatterPoint &q : s.points) {
      if (!std::isfinite(q.x) || !std::isfinite(q.y) || !std::isfinite(q.c))
        fail("plot {}: series '{}' has a point that is not finite ({}, {}, {})", path, s.name, q.x,
             q.y, q.c);
      if ((p.logX && q.x <= 0) || (p.logY && q.y <= 0))
        fail("plot {}: series '{}' has a point ({}, {}) a log scale cannot show", path, s.name, q.x,
             q.y);
      any = true;
    }
  if (!any)
    fail("plot {}: no points to draw", path);
  render(path, [&](const std::string &tmp, Format f) { return scatterScript(tmp, f, p); });
}

void plotLines(const std::string &path, const std::string &title, const std::string &xlabel,
               const std::string &ylabel, const std::vector<Series> &series) {
  formatOf(path);
  bool any = false;
  for (const Series &s : series)
    for (const auto &[x, y] : s.xy) {
      if (!std::isfinite(x) || !std::isfinite(y))
        fail("plot {}: series '{}' has a point that is not finite ({}, {})", path, s.name, x, y);
      any = true;
    }
  if (!any)
    fail("plot {}: no points to draw", path);
  render(path, [&](const std::string &tmp, Format f) {
    return linesScript(tmp, f, title, xlabel, ylabel, series);
  });
}

namespace {

void render(const std::string &path,
            const std::function<std::string(const std::string &, Format)> &makeScript) {
  const Format f = formatOf(path);
  const char *dir = std::getenv("TMPDIR");
  std::string file = std::string(dir && *dir ? dir : "/tmp") + "/npuc-plot-XXXXXX";
  const int fd = mkstemp(file.data());
  if (fd < 0)
    fail("plot {}: cannot create a temporary file in {}: {}", path, dir ? dir : "/tmp",
         std::strerror(errno));
  close(fd);
  // Checked before gnuplot runs, and the temporary file beside the file a link names, so that
  // the rename stays within one file system.
  const std::string tmp = checkOutputPath(path, {}) + ".tmp." + std::to_string(::getpid());
  std::string printed;
  int status = -1;
  try {
    std::ofstream(file, std::ios::trunc) << makeScript(tmp, f);
    status = runGnuplot(path, file, printed);
  } catch (...) {
    std::remove(file.c_str());
    std::remove(tmp.c_str());
    throw;
  }
  std::remove(file.c_str());
  struct stat st {};
  if (status != 0 || stat(tmp.c_str(), &st) != 0 || st.st_size == 0) {
    std::remove(tmp.c_str());
    fail("plot {}: gnuplot failed (exit status {}): {}", path, status, printed);
  }
  replaceWithTemp(tmp, path);
}

} // namespace

} // namespace npuc
