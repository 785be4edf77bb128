// Reference.cpp - the reference executor's driver: walks the graph in topological order, feeds
// each node's input tensors to its kernel (the Ref column of its Ops.def row; the kernels are in
// RefNN.cpp, RefMath.cpp and RefData.cpp) and collects the requested values.
#include "graph/Reference.h"
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <iterator>

namespace npuc::graph {

namespace ref {

RefResult refUnsupported(const RefArgs &a) {
  fail("node '{}' ({}): the reference executor has no kernel for this operator", a.n.name,
       a.n.kind);
}

} // namespace ref

namespace {

using RefKernel = ref::RefResult (*)(const ref::RefArgs &);

// One kernel per OpKind, in Ops.def order.
constexpr RefKernel kRefKernels[] = {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) &ref::ref##Ref,
#include "graph/Ops.def"
};
static_assert(std::size(kRefKernels) == kNumOpKinds, "one reference kernel per OpKind");

} // namespace

std::vector<HostTensor> evalNode(const Graph &g, const Node &n,
                                 const std::vector<const HostTensor *> &ins) {
  return kRefKernels[static_cast<size_t>(n.kind)](ref::RefArgs{g, n, ins});
}

HostTensor constantTensor(const Value &v) {
  NPUC_ASSERT(v.isConstant(), "constantTensor needs a constant value");
  if (v.f32)
    return HostTensor(v.shape, *v.f32);
  std::vector<float> d(v.i64->size());
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>((*v.i64)[i]);
  return HostTensor(v.shape, std::move(d));
}

std::map<ValueId, HostTensor> runReferenceAll(const Graph &g,
                                              const std::map<ValueId, HostTensor> &inputs) {
  std::map<ValueId, HostTensor> env;
  for (ValueId in : g.inputs) {
    const Value &v = g.value(in);
    auto it = inputs.find(in);
    if (it == inputs.end())
      fail("reference run: no tensor given for input '{}'", v.name);
    if (it->second.shape != v.shape)
      fail("reference run: input '{}' expects shape {} but got {}", v.name, shapeToString(v.shape),
           shapeToString(it->second.shape));
    NPUC_ASSERT(it->second.size() == numElements(v.shape), "tensor data matches its shape");
    env[in] = it->second;
  }
  auto fetch = [&](ValueId id) -> const HostTensor * {
    if (id == kNoValue)
      return nullptr;
    auto it = env.find(id);
    if (it != env.end())
      return &it->second;
    const Value &v = g.value(id);
    NPUC_ASSERT(v.isConstant(), "a node input is a graph input, a constant or computed earlier");
    return &(env[id] = constantTensor(v));
  };
  for (NodeId nid : g.topoOrder()) {
    const Node &n = g.node(nid);
    std::vector<const HostTensor *> ins;
    for (ValueId in : n.inputs)
      ins.push_back(fetch(in));
    std::vector<HostTensor> outs = evalNode(g, n, ins);
    NPUC_ASSERT(outs.size() <= n.outputs.size(), "a kernel returns at most one tensor per output");
    for (size_t i = 0; i < outs.size(); ++i) {
      NPUC_ASSERT(
          outs[i].shape == g.value(n.outputs[i]).shape,
          fmt::format("kernel output shape of node '{}' matches the inferred shape", n.name));
      env[n.outputs[i]] = std::move(outs[i]);
    }
  }
  for (ValueId o : g.outputs)
    fetch(o);
  return env;
}

std::map<ValueId, HostTensor> runReference(const Graph &g,
                                           const std::map<ValueId, HostTensor> &inputs) {
  std::map<ValueId, HostTensor> all = runReferenceAll(g, inputs);
  std::map<ValueId, HostTensor> out;
  for (ValueId o : g.outputs)
    out[o] = all.at(o);
  return out;
}

} // namespace npuc::graph
