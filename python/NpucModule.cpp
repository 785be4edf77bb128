// NpucModule.cpp - `npuc._npuc`, the C++ half of the Python module (docs/PYTHON.md).
//
// A thin binding over the same libraries the `npuc` command uses (driver, explore): nothing here
// compiles, simulates or explores by itself. Values cross as the simplest faithful encodings,
// and python/npuc/__init__.py turns them into Python objects: tensors as .npy bytes (numpy's own
// format, parsed by support/Npy.h with its dtype checks), reports and records as JSON text,
// descriptions as YAML or JSON text (JSON is YAML). Every npuc::Error becomes npuc.Error with
// the same message. Long calls release the GIL; the explore callback takes it again, on whichever
// worker thread finished the point.
#include "explore/Explore.h"
#include "explore/Report.h"
#include "explore/Results.h"
#include "explore/Sweep.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Npy.h"
#include "tools/driver/Compiler.h"
#include "tools/driver/Runtime.h"

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

namespace py = pybind11;
using namespace npuc;

namespace {

/// A compiled model, as Python holds it.
struct Model {
  driver::CompiledModel m;
};

frontend::ImportOptions importOptions(const std::map<std::string, std::vector<int64_t>> &shapes) {
  frontend::ImportOptions io;
  for (const auto &[name, dims] : shapes)
    io.inputShapes[name] = Shape(dims.begin(), dims.end());
  io.pinnedBy = "input_shapes";
  return io;
}

std::map<std::string, HostTensor> decodeInputs(const std::map<std::string, py::bytes> &npy) {
  std::map<std::string, HostTensor> in;
  for (const auto &[name, bytes] : npy)
    in[name] = parseNpy(std::string(bytes), "input '" + name + "'");
  return in;
}

std::map<std::string, py::bytes> encodeOutputs(const std::map<std::string, HostTensor> &out) {
  std::map<std::string, py::bytes> r;
  for (const auto &[name, t] : out)
    r[name] = py::bytes(encodeNpy(t));
  return r;
}

std::shared_ptr<Model> compile(const std::string &model, const std::string &targetText,
                               const std::string &targetOrigin,
                               const std::map<std::string, std::vector<int64_t>> &shapes) {
  const frontend::ImportOptions io = importOptions(shapes);
  auto r = std::make_shared<Model>();
  py::gil_scoped_release nogil;
  if (driver::isCpuTarget(targetText))
    r->m = driver::compileModelForCpu(model, io);
  else
    r->m = driver::compileModel(model, isa::parseTarget(targetText, targetOrigin), io);
  return r;
}

py::tuple run(const Model &model, const std::map<std::string, py::bytes> &inputs) {
  std::map<std::string, HostTensor> in = decodeInputs(inputs);
  driver::RunResult res;
  {
    py::gil_scoped_release nogil;
    driver::validateInputs(model.m.graph, in);
    res = driver::runModel(model.m, in);
  }
  return py::make_tuple(encodeOutputs(res.outputs), res.report.dump());
}

std::map<std::string, py::bytes>
reference(const std::string &model, const std::map<std::string, py::bytes> &inputs,
          const std::map<std::string, std::vector<int64_t>> &shapes) {
  std::map<std::string, HostTensor> in = decodeInputs(inputs);
  std::map<std::string, HostTensor> named;
  {
    py::gil_scoped_release nogil;
    const graph::Graph g = driver::loadModelGraph(model, importOptions(shapes));
    named = driver::runReferenceNamed(g, std::move(in));
  }
  return encodeOutputs(named);
}

/// The model's groups: name, ops, placement and (CPU groups) why.
std::string groupsJson(const Model &model) {
  nlohmann::json a = nlohmann::json::array();
  const graph::Graph &g = model.m.graph;
  for (const graph::FusedGroup &grp : g.groups) {
    nlohmann::json ops = nlohmann::json::array();
    for (graph::NodeId n : grp.nodes)
      ops.push_back(graph::opName(g.node(n).kind));
    a.push_back({{"name", grp.name},
                 {"ops", ops},
                 {"placement", graph::placementName(grp.placement)},
                 {"cpu_reason", grp.cpuReason}});
  }
  return a.dump();
}

std::string runExplore(const std::string &spec, const std::string &outDir, int jobs, bool plots,
                       const std::optional<py::function> &onPoint) {
  const explore::SweepSpec s = explore::loadSweep(spec);
  explore::ExploreOptions o;
  o.outDir = outDir;
  o.jobs = jobs;
  o.plots = plots;
  // A Python exception in the callback stops further calls and is raised after the sweep.
  std::optional<py::error_already_set> raised;
  if (onPoint)
    o.onPoint = [&](const nlohmann::json &r) {
      py::gil_scoped_acquire gil;
      if (raised)
        return;
      try {
        (*onPoint)(r.dump());
      } catch (py::error_already_set &e) {
        raised = std::move(e);
      }
    };
  std::ostringstream log;
  explore::ExploreSummary sum;
  {
    py::gil_scoped_release nogil;
    sum = explore::runSweep(s, o, log);
  }
  if (raised)
    throw std::move(*raised);
  return nlohmann::json{{"planned", sum.planned},
                        {"resumed", sum.resumed},
                        {"evaluated", sum.evaluated},
                        {"rejected", sum.rejected},
                        {"report", sum.report},
                        {"log", log.str()},
                        {"results", outDir + "/results.jsonl"}}
      .dump();
}

} // namespace

PYBIND11_MODULE(_npuc, m) {
  m.doc() = "npuc's C++ core (use the npuc package, python/npuc/__init__.py)";
  py::register_exception<Error>(m, "Error");
  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def("groups_json", &groupsJson)
      .def_property_readonly("target_name", [](const Model &x) { return x.m.target.name; })
      .def_property_readonly("target_yaml", [](const Model &x) { return x.m.target.sourceText; });
  m.def("compile", &compile, py::arg("model"), py::arg("target_text"), py::arg("target_origin"),
        py::arg("input_shapes"));
  m.def("run", &run, py::arg("model"), py::arg("inputs"));
  m.def("reference", &reference, py::arg("model"), py::arg("inputs"), py::arg("input_shapes"));
  m.def(
      "target_json",
      [](const std::string &text, const std::string &origin) {
        isa::parseTarget(text, origin); // a description npuc would reject is an error here too
        return explore::yamlAsJson(text, origin).dump();
      },
      py::arg("text"), py::arg("origin"));
  m.def("read_file", [](const std::string &path) { return py::bytes(readFile(path)); });
  m.def("explore", &runExplore, py::arg("spec"), py::arg("out_dir"), py::arg("jobs"),
        py::arg("plots"), py::arg("on_point"));
  m.def(
      "pareto",
      [](const std::string &recordsJson, const std::vector<std::string> &objectives) {
        explore::Results r;
        for (const nlohmann::json &rec : nlohmann::json::parse(recordsJson))
          r.records.push_back(rec);
        std::vector<explore::Metric> ms = explore::metricsFromNames(objectives, "pareto");
        if (ms.empty())
          fail("pareto: no objective given");
        return explore::paretoRecords(r, ms);
      },
      py::arg("records_json"), py::arg("objectives"));
  m.def("read_results", [](const std::string &path) {
    explore::Results r = explore::readResults(path);
    return nlohmann::json{{"header", r.header}, {"records", r.records}}.dump();
  });
}
