// main.cpp - deploying an npuc model ahead of time: a plain C++ program that loads a shared
// library made by `npuc compile model.onnx --target cpu --emit so -o model.so` through the
// header-only runtime (include/npuc/runtime.h) and runs it. Nothing of the compiler is linked.
//
//   aot_example model.so input.npy [expected.npy] [threads]
//
// Prints the output's shape, top-1 index and the run time; with expected.npy it compares
// (max|out - expected| <= 1e-4 * max|expected| + 1e-6, fp32 with a different summation order)
// and exits 1 on a mismatch.
#include "npuc/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// A minimal .npy reader: little-endian float32, C order (what numpy.save writes for float32).
std::vector<float> readNpyF32(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error(path + ": cannot open");
  char magic[8];
  f.read(magic, 8);
  if (!f || std::string(magic + 1, 5) != "NUMPY")
    throw std::runtime_error(path + ": not a .npy file");
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    uint16_t h = 0;
    f.read(reinterpret_cast<char *>(&h), 2);
    headerLen = h;
  } else {
    f.read(reinterpret_cast<char *>(&headerLen), 4);
  }
  std::string header(headerLen, '\0');
  f.read(header.data(), headerLen);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": expected a C-order float32 array, header " + header);
  std::vector<float> data;
  float v;
  while (f.read(reinterpret_cast<char *>(&v), sizeof v))
    data.push_back(v);
  return data;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " model.so input.npy [expected.npy] [threads]\n";
    return 2;
  }
  try {
    int threads = argc > 4 ? std::stoi(argv[4]) : 0;
    npuc::rt::Model model = npuc::rt::Model::load(argv[1], threads);
    std::vector<float> x = readNpyF32(argv[2]);
    model.set_input(model.input_names().at(0), x.data(), x.size());
    auto t0 = std::chrono::steady_clock::now();
    model.run();
    auto t1 = std::chrono::steady_clock::now();
    const std::string out = model.output_names().at(0);
    std::vector<float> y = model.get_output(out);
    std::string shape;
    for (int64_t d : model.output_shape(out)) {
      if (!shape.empty())
        shape += 'x';
      shape += std::to_string(d);
    }
    long top1 = long(std::max_element(y.begin(), y.end()) - y.begin());
    std::printf("output '%s' [%s], top-1 %ld, %.3f ms with %d thread(s)\n", out.c_str(),
                shape.c_str(), top1, std::chrono::duration<double, std::milli>(t1 - t0).count(),
                model.threads());
    if (argc > 3) {
      std::vector<float> ref = readNpyF32(argv[3]);
      if (ref.size() != y.size()) {
        std::printf("FAIL: %zu output elements, expected %zu\n", y.size(), ref.size());
        return 1;
      }
      double scale = 0, worst = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        scale = std::max(scale, double(std::fabs(ref[i])));
        worst = std::max(worst, double(std::fabs(y[i] - ref[i])));
      }
      bool ok = worst <= 1e-4 * scale + 1e-6;
      std::printf("%s: max abs error %.3g (scale %.3g)\n", ok ? "OK" : "FAIL", worst, scale);
      return ok ? 0 : 1;
    }
  } catch (const std::exception &e) {
    std::cerr << "aot_example: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
