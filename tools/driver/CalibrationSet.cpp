// CalibrationSet.cpp - reading --calibrate's samples (CalibrationSet.h).
#include "tools/driver/CalibrationSet.h"

#include "support/Error.h"
#include "support/File.h"
#include "support/Npy.h"

#include <algorithm>
#include <filesystem>

namespace npuc::driver {

namespace fs = std::filesystem;

namespace {

// Entries of `dir` that pass `keep`, in name order (a directory listing's order is arbitrary).
std::vector<fs::path> sortedEntries(const fs::path &dir,
                                    bool (*keep)(const fs::directory_entry &)) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (keep(*it))
      out.push_back(it->path());
  if (ec)
    fail("--calibrate {}: cannot list the directory: {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

bool isNpyFile(const fs::directory_entry &e) {
  return e.is_regular_file() && e.path().extension() == ".npy";
}

bool isDirectory(const fs::directory_entry &e) {
  return e.is_directory();
}

// Rows [i * n, (i + 1) * n) of t's storage as a tensor of `shape` (n elements).
HostTensor sliceOf(const HostTensor &t, const Shape &shape, int64_t i) {
  const size_t n = static_cast<size_t>(numElements(shape)), at = static_cast<size_t>(i) * n;
  if (t.isInt())
    return HostTensor(shape, t.dtype,
                      std::vector<int64_t>(t.ints.begin() + at, t.ints.begin() + at + n));
  HostTensor s(shape, std::vector<float>(t.data.begin() + at, t.data.begin() + at + n));
  s.dtype = t.dtype;
  return s;
}

// The samples of input `v` that `file` holds: itself, or each item of a stack of them.
std::vector<HostTensor> samplesOfFile(const graph::Value &v, const std::string &file) {
  HostTensor t = readNpy(file);
  if (t.dtype != v.dtype)
    fail("--calibrate {}: the file holds {} values but the model's input '{}' is {}", file,
         dtypeName(t.dtype), v.name, dtypeName(v.dtype));
  if (t.shape == v.shape)
    return {std::move(t)};
  const Shape &s = v.shape;
  const bool stacked = t.shape.size() == s.size() + 1 && t.shape[0] > 0 &&
                       std::equal(s.begin(), s.end(), t.shape.begin() + 1);
  const bool batched = !s.empty() && s[0] == 1 && t.shape.size() == s.size() && t.shape[0] > 0 &&
                       std::equal(s.begin() + 1, s.end(), t.shape.begin() + 1);
  if (!stacked && !batched)
    fail("--calibrate {}: input '{}' expects shape {} (or a stack of them: N x {}), the file "
         "holds {}",
         file, v.name, shapeToString(s), shapeToString(s), shapeToString(t.shape));
  std::vector<HostTensor> out;
  for (int64_t i = 0; i < t.shape[0]; ++i)
    out.push_back(sliceOf(t, s, i));
  return out;
}

// One directory of a model of several inputs: a file per input, each one sample or a stack of
// the same count.
void addSampleDirectory(const graph::Graph &g, const fs::path &dir,
                        std::vector<CalibrationSample> &set) {
  std::vector<CalibrationSample> here;
  for (graph::ValueId id : g.inputs) {
    const graph::Value &v = g.value(id);
    const fs::path file = dir / (sanitizeName(v.name) + ".npy");
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      fail("--calibrate {}: no file {} for input '{}' (a model of several inputs takes a "
           "directory per sample, holding a file named after each input)",
           dir.string(), file.filename().string(), v.name);
    std::vector<HostTensor> items = samplesOfFile(v, file.string());
    if (here.empty())
      here.resize(items.size());
    if (items.size() != here.size())
      fail("--calibrate {}: {} holds {} samples but the other inputs' files {}", dir.string(),
           file.filename().string(), items.size(), here.size());
    for (size_t i = 0; i < items.size(); ++i)
      here[i][id] = std::move(items[i]);
  }
  for (CalibrationSample &s : here)
    set.push_back(std::move(s));
}

void addPath(const graph::Graph &g, const std::string &path, std::vector<CalibrationSample> &set) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    fail("--calibrate {}: no such file or directory", path);
  const size_t before = set.size();
  if (g.inputs.size() == 1) {
    const graph::Value &v = g.value(g.inputs[0]);
    std::vector<std::string> files;
    if (fs::is_directory(st))
      for (const fs::path &p : sortedEntries(path, isNpyFile))
        files.push_back(p.string());
    else
      files.push_back(path);
    for (const std::string &f : files)
      for (HostTensor &t : samplesOfFile(v, f))
        set.push_back({{v.id, std::move(t)}});
  } else {
    if (!fs::is_directory(st))
      fail("--calibrate {}: the model has {} inputs, so a sample is a directory holding a file "
           "named after each input",
           path, g.inputs.size());
    const std::vector<fs::path> subdirs = sortedEntries(path, isDirectory);
    if (subdirs.empty())
      addSampleDirectory(g, path, set);
    for (const fs::path &d : subdirs)
      addSampleDirectory(g, d, set);
  }
  if (set.size() == before)
    fail("--calibrate {}: no sample in it (no .npy file)", path);
}

} // namespace

std::vector<CalibrationSample> loadCalibrationSet(const graph::Graph &g,
                                                  const std::vector<std::string> &paths) {
  if (g.inputs.empty())
    fail("--calibrate: the model has no inputs to calibrate on");
  std::vector<CalibrationSample> set;
  for (const std::string &p : paths)
    addPath(g, p, set);
  NPUC_ASSERT(!set.empty(), "addPath adds a sample or fails");
  return set;
}

} // namespace npuc::driver
