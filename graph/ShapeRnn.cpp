// ShapeRnn.cpp - the shape rule of the recurrent operators RNN, GRU and LSTM (ShapeInternal.h):
// Y [S, D, B, H] (layout 1: [B, S, D, H]) and Y_h / Y_c [D, B, H] ([B, D, H]); rnnSpec (Rnn.h)
// checks the attributes and every input's shape.
#include "graph/Rnn.h"
#include "graph/ShapeInternal.h"

namespace npuc::graph::shape {

OutTypes inferRnn(const Graph &g, Node &n) {
  const RnnSpec s = rnnSpec(g, n);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] != kNoValue && i != kRnnSequenceLens && inType(g, n, i) != DType::F32)
      fail("{}: input {} must be a float tensor, got {}", where(n), i, dtypeName(inType(g, n, i)));
  if (s.hasSequenceLens && inType(g, n, kRnnSequenceLens) == DType::Bool)
    fail("{}: input 4 (sequence_lens) must be an integer tensor", where(n));
  OutTypes out{{s.yShape(), DType::F32}, {s.stateShape(), DType::F32}};
  if (n.kind == OpKind::LSTM)
    out.push_back({s.stateShape(), DType::F32});
  out.resize(n.outputs.size());
  return out;
}

} // namespace npuc::graph::shape
