// CalibrationSet.h - the samples `--calibrate` names, read against a model's inputs.
//
// Each path is a .npy file or a directory. For a model of one input:
//   - a file holds one sample (the input's shape) or a stack of them: one more leading dim
//     ([N, ...input shape]), or, when the input's batch dim is 1, N in its place;
//   - a directory holds such files, every *.npy in it, in name order.
// For a model of several inputs every path is a directory of one sample (or of a stack, the same
// count in every file): a file per input, named after it (support/File.h sanitizeName: NAME.npy
// with characters outside [A-Za-z0-9_.-] as '_'), or a directory of such directories, in name
// order.
//
// A file whose dtype or shape does not fit its input, a missing file, a directory with no sample
// and an empty set are errors naming the path and the input.
#pragma once

#include "graph/Graph.h"
#include "support/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace npuc::driver {

using CalibrationSample = std::map<graph::ValueId, HostTensor>;

/// Every sample `paths` holds for `g`'s inputs, in order (at least one; throws npuc::Error).
std::vector<CalibrationSample> loadCalibrationSet(const graph::Graph &g,
                                                  const std::vector<std::string> &paths);

} // namespace npuc::driver
