// npuc/runtime.h - the deployment runtime: runs a model compiled ahead of time with
//   npuc compile model.onnx --target cpu --emit so -o model.so
// from a C++ program, without the compiler. Header-only (C++17, POSIX dlopen; link with -ldl
// on old glibc and with the threads library).
//
//   npuc::rt::Model m = npuc::rt::Model::load("model.so");   // reads model.so.graph/.params
//   m.set_input("input", data, count);                        // fp32, row-major (NCHW)
//   m.run();
//   std::vector<float> y = m.get_output("output");
//
// The plan file format is documented in cpu_fallback/Aot.h. Every problem (missing file,
// malformed plan line, unknown input, wrong element count) throws std::runtime_error with a
// message naming the file and line, or the tensor.
#pragma once

#include "npuc/thread_pool.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npuc::rt {

class Model {
public:
  /// Loads `<lib>`, `<lib>.graph` and `<lib>.params`. threads <= 0 uses the plan's default.
  static Model load(const std::string &lib, int threads = 0) {
    Model m;
    m.lib_ = lib;
    m.parsePlan(lib + ".graph");
    m.loadParams(lib + ".params");
    m.handle_.reset(dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!m.handle_)
      throw std::runtime_error(lib + ": cannot load: " + dlerror());
    for (Call &c : m.calls_) {
      c.fn = reinterpret_cast<void (*)(void **)>(dlsym(m.handle_.get(), c.symbol.c_str()));
      if (!c.fn)
        throw std::runtime_error(lib + ": kernel '" + c.symbol + "' is not defined");
    }
    // Parallel loops reach the thread pool through the library's hook (absent: none exist).
    if (auto *hook =
            reinterpret_cast<ParallelForFn *>(dlsym(m.handle_.get(), "npuc_parallel_for_hook")))
      *hook = &ThreadPool::parallelFor;
    m.threads_ = threads > 0 ? threads : m.threads_;
    return m;
  }

  std::vector<std::string> input_names() const { return names(inputs_); }
  std::vector<std::string> output_names() const { return names(outputs_); }
  std::vector<int64_t> input_shape(const std::string &name) const {
    return find(inputs_, name, "input").shape;
  }
  std::vector<int64_t> output_shape(const std::string &name) const {
    return find(outputs_, name, "output").shape;
  }

  void set_input(const std::string &name, const float *data, size_t count) {
    const Io &io = find(inputs_, name, "input");
    std::vector<float> &buf = storage_.at(io.value);
    if (count != buf.size())
      throw std::runtime_error("input '" + name + "': expected " + std::to_string(buf.size()) +
                               " elements, got " + std::to_string(count));
    std::memcpy(buf.data(), data, count * sizeof(float));
  }

  void run() {
    ThreadPool::setThreads(threads_);
    std::vector<void *> args;
    for (const Call &c : calls_) {
      args.clear();
      for (int64_t v : c.args)
        args.push_back(pointer(v));
      c.fn(args.data());
    }
  }

  std::vector<float> get_output(const std::string &name) const {
    const Io &io = find(outputs_, name, "output");
    const Value &v = values_.at(io.value);
    if (v.paramOffset >= 0)
      return std::vector<float>(params_.begin() + v.paramOffset,
                                params_.begin() + v.paramOffset + v.elements);
    return storage_.at(io.value);
  }

  int threads() const { return threads_; }

private:
  struct Value {
    std::string kind, name;
    int64_t elements = 0, paramOffset = -1;
  };
  struct Io {
    int64_t value = -1;
    std::vector<int64_t> shape;
    std::string name;
  };
  struct Call {
    std::string symbol;
    std::vector<int64_t> args;
    void (*fn)(void **) = nullptr;
  };
  struct Closer {
    void operator()(void *h) const { dlclose(h); }
  };

  std::string lib_;
  int threads_ = 1;
  std::map<int64_t, Value> values_;
  std::map<int64_t, std::vector<float>> storage_; // inputs and intermediates
  std::vector<float> params_;
  std::vector<Io> inputs_, outputs_;
  std::vector<Call> calls_;
  std::unique_ptr<void, Closer> handle_;

  static std::vector<std::string> names(const std::vector<Io> &ios) {
    std::vector<std::string> out;
    for (const Io &io : ios)
      out.push_back(io.name);
    return out;
  }
  const Io &find(const std::vector<Io> &ios, const std::string &name, const char *what) const {
    for (const Io &io : ios)
      if (io.name == name)
        return io;
    std::string all;
    for (const Io &io : ios) {
      if (!all.empty())
        all += ", ";
      all += io.name;
    }
    throw std::runtime_error(lib_ + ": no " + what + " named '" + name + "' (the model's " + what +
                             "s are: " + all + ")");
  }
  void *pointer(int64_t v) {
    const Value &val = values_.at(v);
    if (val.paramOffset >= 0)
      return params_.data() + val.paramOffset;
    return storage_.at(v).data();
  }
  static std::string rest(std::istringstream &in) {
    std::string s;
    std::getline(in >> std::ws, s);
    return s;
  }

  void parsePlan(const std::string &path) {
    std::ifstream f(path);
    if (!f)
      throw std::runtime_error(path + ": cannot open the model's plan");
    std::string line;
    int lineNo = 0;
    auto bad = [&](const std::string &why) {
      return std::runtime_error(path + ":" + std::to_string(lineNo) + ": " + why);
    };
    while (std::getline(f, line)) {
      ++lineNo;
      std::istringstream in(line);
      std::string tag;
      in >> tag;
      if (lineNo == 1) {
        int version = 0;
        in >> version;
        if (tag != "npuc-aot" || version != 1)
          throw bad("not an npuc ahead-of-time plan (expected 'npuc-aot 1')");
        continue;
      }
      if (tag == "threads") {
        if (!(in >> threads_) || threads_ < 1)
          throw bad("bad thread count");
      } else if (tag == "value") {
        int64_t id = 0;
        Value v;
        if (!(in >> id >> v.kind >> v.elements >> v.paramOffset) || v.elements < 0)
          throw bad("malformed value record");
        v.name = rest(in);
        if (v.kind != "const")
          storage_[id].assign(size_t(v.elements), 0.0f);
        values_[id] = v;
      } else if (tag == "input" || tag == "output") {
        Io io;
        size_t rank = 0;
        if (!(in >> io.value >> rank))
          throw bad("malformed " + tag + " record");
        io.shape.resize(rank);
        for (int64_t &d : io.shape)
          if (!(in >> d))
            throw bad("malformed shape");
        io.name = rest(in);
        if (!values_.count(io.value))
          throw bad(tag + " '" + io.name + "' names an undeclared value");
        (tag == "input" ? inputs_ : outputs_).push_back(io);
      } else if (tag == "call") {
        Call c;
        size_t argc = 0;
        if (!(in >> c.symbol >> argc))
          throw bad("malformed call record");
        c.args.resize(argc);
        for (int64_t &a : c.args)
          if (!(in >> a) || !values_.count(a))
            throw bad("call '" + c.symbol + "' names an undeclared value");
        calls_.push_back(c);
      } else if (!tag.empty()) {
        throw bad("unknown record '" + tag + "'");
      }
    }
    if (lineNo == 0)
      throw std::runtime_error(path + ": empty plan");
  }

  void loadParams(const std::string &path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
      throw std::runtime_error(path + ": cannot open the model's parameters");
    std::streamsize bytes = f.tellg();
    if (bytes % std::streamsize(sizeof(float)))
      throw std::runtime_error(path + ": size is not a multiple of 4 bytes");
    params_.resize(size_t(bytes) / sizeof(float));
    f.seekg(0);
    f.read(reinterpret_cast<char *>(params_.data()), bytes);
    for (const auto &[id, v] : values_)
      if (v.kind == "const" &&
          (v.paramOffset < 0 || size_t(v.paramOffset + v.elements) > params_.size()))
        throw std::runtime_error(path + ": constant '" + v.name + "' lies outside the file");
  }
};

} // namespace npuc::rt
