// ShapeSignal.cpp - shape rules of Einsum, Det and the signal-processing operators (the window
// functions, MelWeightMatrix, DFT, STFT) (ShapeInternal.h). Their constant scalar inputs (window
// sizes, the mel matrix's parameters) are read here; DFT's and STFT's are attributes by import.
#include "graph/DataOps.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

namespace npuc::graph::shape {

namespace {

// Input i as a constant scalar (the importer checked that it is one).
double constScalar(const Graph &g, const Node &n, size_t i) {
  const Value &v = g.value(n.inputs.at(i));
  if (!v.isConstant() || numElements(v.shape) != 1)
    fail("{}: input {} must be a constant scalar", where(n), i);
  return v.f32 ? (*v.f32)[0] : static_cast<double>((*v.i64)[0]);
}

// DFT/STFT input: a signal whose last dimension holds the real part (1) or real and imaginary
// parts (2).
void requireComplexLast(const Graph &g, const Node &n, size_t minRank) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < minRank || (x.back() != 1 && x.back() != 2))
    fail("{}: the signal must have rank >= {} and a last dimension of 1 (real) or 2 (complex), got "
         "{}",
         where(n), minRank, shapeToString(x));
}

} // namespace

OutTypes inferEinsum(const Graph &g, Node &n) {
  std::vector<Shape> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    ins.push_back(inShape(g, n, i));
  EinsumSpec spec = parseEinsum(n, ins);
  Shape out;
  for (int l : spec.output)
    out.push_back(spec.extents[static_cast<size_t>(l)]);
  return {{out, inType(g, n, 0)}};
}

OutTypes inferDet(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    fail("{}: input must be [..., M, M], got {}", where(n), shapeToString(x));
  return {{Shape(x.begin(), x.end() - 2), inType(g, n, 0)}};
}

OutTypes inferWindow(const Graph &g, Node &n) {
  double size = constScalar(g, n, 0);
  if (size < 1)
    fail("{}: size {} must be positive", where(n), size);
  return {{{static_cast<int64_t>(size)}, castTarget(n, n.attrInt("output_datatype", 1))}};
}

OutTypes inferMelWeightMatrix(const Graph &g, Node &n) {
  double bins = constScalar(g, n, 0), dft = constScalar(g, n, 1), rate = constScalar(g, n, 2);
  double lo = constScalar(g, n, 3), hi = constScalar(g, n, 4);
  if (bins < 1 || dft < 1 || rate <= 0 || lo < 0 || hi <= lo || hi > rate / 2)
    fail("{}: needs num_mel_bins, dft_length, sample_rate > 0 and 0 <= lower_edge_hertz < "
         "upper_edge_hertz <= sample_rate / 2, got {}, {}, {}, {}, {}",
         where(n), bins, dft, rate, lo, hi);
  return {{{static_cast<int64_t>(dft) / 2 + 1, static_cast<int64_t>(bins)},
           castTarget(n, n.attrInt("output_datatype", 1))}};
}

OutTypes inferDFT(const Graph &g, Node &n) {
  requireComplexLast(g, n, 2);
  Shape out = inShape(g, n, 0);
  int64_t axis = axisAttr(n, "axis", out.size() - 1);
  int64_t len = n.attrInt("dft_length", 0);
  if (len < 1)
    fail("{}: dft_length {} must be positive", where(n), len);
  out[static_cast<size_t>(axis)] = n.attrInt("onesided", 0) ? len / 2 + 1 : len;
  out.back() = 2;
  return {{out, DType::F32}};
}

OutTypes inferSTFT(const Graph &g, Node &n) {
  requireComplexLast(g, n, 3);
  const Shape &x = inShape(g, n, 0);
  if (x.size() != 3)
    fail("{}: the signal must be [batch, length, 1 or 2], got {}", where(n), shapeToString(x));
  int64_t step = n.attrInt("frame_step", 0), len = n.attrInt("frame_length", 0);
  if (step < 1 || len < 1 || len > x[1])
    fail("{}: frame_step {} and frame_length {} must be positive, the frame at most the signal "
         "length {}",
         where(n), step, len, x[1]);
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue && inShape(g, n, 1) != Shape{len})
    fail("{}: window has shape {}, expected [{}] (the frame length)", where(n),
         shapeToString(inShape(g, n, 1)), len);
  int64_t frames = (x[1] - len) / step + 1;
  return {{{x[0], frames, n.attrInt("onesided", 1) ? len / 2 + 1 : len, 2}, DType::F32}};
}

} // namespace npuc::graph::shape
