// cpu_bench.cpp - times a model compiled ahead of time for the CPU (npuc compile --target cpu
// --emit so) through the deployment runtime (include/npuc/runtime.h): load once, warm up, then
// the median of N runs of Model::run(). Prints one machine-readable line:
//   npuc <threads> <median ms> <min ms>
// bench/cpu/bench.sh runs it next to ONNX Runtime and prints the table.
#include "npuc/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

int main(int argc, char **argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " model.so threads iterations\n";
    return 2;
  }
  try {
    int threads = std::stoi(argv[2]), iters = std::stoi(argv[3]);
    npuc::rt::Model m = npuc::rt::Model::load(argv[1], threads);
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> d(-1, 1);
    for (const std::string &name : m.input_names()) {
      size_t n = 1;
      for (int64_t s : m.input_shape(name))
        n *= size_t(s);
      std::vector<float> x(n);
      for (float &v : x)
        v = d(rng);
      m.set_input(name, x.data(), n);
    }
    for (int i = 0; i < 2; ++i)
      m.run();
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      m.run();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("npuc %d %.3f %.3f\n", threads, ms[ms.size() / 2], ms.front());
  } catch (const std::exception &e) {
    std::cerr << "cpu_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
