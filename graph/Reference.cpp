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

using ref::RefKernel;

// One kernel per OpKind, in Ops.def order.
constexpr RefKernel kRefKernels[] = {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) &ref::ref##Ref,
#include "graph/Ops.def"
};
static_assert(std::size(kRefKernels) == kNumOpKinds, "one reference kernel per OpKind");

// A kernel's result as the output's type: fp32 results of float outputs take the type (float16
// rounds), others convert with Cast's rules (an fp32 index or predicate becomes int64 or bool).
HostTensor asOutputType(HostTensor t, DType want) {
  if (t.dtype == want)
    return t;
  if (!t.isInt() && isFloatType(want)) {
    t.dtype = want;
    if (want == DType::F16)
      t = castTensor(t, DType::F16);
    return t;
  }
  return castTensor(t, want);
}

} // namespace

std::vector<HostTensor> evalNode(const Graph &g, const Node &n,
                                 const std::vector<const HostTensor *> &ins) {
  const RefKernel table = kRefKernels[static_cast<size_t>(n.kind)];
  std::vector<HostTensor> outs;
  if (RefKernel k = ref::integerKernel(n, ins)) {
    outs = k(ref::RefArgs{g, n, ins});
  } else if (ref::readsTypedTensors(n.kind)) {
    outs = table(ref::RefArgs{g, n, ins});
  } else {
    // An fp32 kernel: integer inputs are handed over as fp32, which must hold them exactly.
    std::vector<HostTensor> views;
    views.reserve(ins.size());
    std::vector<const HostTensor *> fins;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!ins[i] || !ins[i]->isInt()) {
        fins.push_back(ins[i]);
        continue;
      }
      if (int64_t bad = firstInexactInFloat(*ins[i]); bad >= 0)
        fail("node '{}' ({}): input {} ('{}', {}) holds {} at element {}, which this operator "
             "computes in fp32 and fp32 cannot hold exactly (|v| > 2^24)",
             n.name, n.kind, i, g.value(n.inputs[i]).name, dtypeName(ins[i]->dtype),
             ins[i]->ints[static_cast<size_t>(bad)], bad);
      fins.push_back(&views.emplace_back(castTensor(*ins[i], DType::F32)));
    }
    outs = table(ref::RefArgs{g, n, fins});
  }
  for (size_t i = 0; i < outs.size() && i < n.outputs.size(); ++i)
    outs[i] = asOutputType(std::move(outs[i]), g.value(n.outputs[i]).dtype);
  return outs;
}

HostTensor typedConstant(const Value &v) {
  NPUC_ASSERT(v.isConstant(), "typedConstant needs a constant value");
  if (v.i64)
    return HostTensor(v.shape, v.dtype, *v.i64);
  HostTensor t(v.shape, *v.f32);
  t.dtype = v.dtype;
  return t;
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
    if (it->second.dtype != v.dtype)
      fail("reference run: input '{}' is {} but the model's input is {}", v.name,
           dtypeName(it->second.dtype), dtypeName(v.dtype));
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
    return &(env[id] = typedConstant(v));
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
      NPUC_ASSERT(outs[i].size() == numElements(outs[i].shape),
                  fmt::format("kernel output of node '{}' fills its storage", n.name));
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
