#!/usr/bin/env python3
"""gen_graph.py - random valid ONNX graphs for the differential tester (docs/DIFFTEST.md).

From an integer seed, builds a small graph (a few to ~30 nodes, every tensor at most MAX_ELEMS
elements) of operators npuc supports (docs/OPERATORS.md): conv blocks (plain, depthwise, grouped,
strided, dilated, with BatchNormalization and activations: the conv+bn+relu and conv+add+relu
fusions of graph/FoldBatchNorm.cpp and graph/Fusion.cpp), residual adds, concat/split, channel
shuffles (Reshape-Transpose-Reshape), broadcasting binary ops, reductions, pooling, MatMul/Gemm
with bias (matmul+bias epilogues), a scalar scale before a MatMul (graph/SinkScale.cpp), softmax,
LayerNormalization, the Erf GELU, layout ops, and the elementwise activations.

Three random streams keep the minimiser's edits local: `struct` picks the operators and their
attributes, `dims` the extents (one numbered draw each, which DimOverride can replace), and each
node's weights come from a stream of its own. Shapes come from ONNX's shape inference after each
step; a step whose tensor exceeds MAX_ELEMS, or whose inference fails, is rolled back.

Only continuous operators are used (no ArgMax, Floor, comparisons): a differential test with an
fp16 target must not amplify a rounding difference into a different discrete choice.

    gen_graph.py SEED OUTDIR     writes OUTDIR/model.onnx, OUTDIR/in_<name>.npy, OUTDIR/graph.txt
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OPSET = 17
MAX_ELEMS = 4096

CHANNELS = [1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 17, 24, 32]
SPATIAL = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16]
FEATURES = [1, 2, 3, 5, 8, 13, 16, 17, 24, 31, 32, 48, 64]
SEQ = [1, 2, 3, 5, 7, 8, 12, 16]


class Infeasible(Exception):
    """The step does not apply to the chosen value (rolled back; another step is tried)."""


class Spec:
    """A graph as plain data: what the minimiser edits and write_model serialises."""

    def __init__(self):
        self.inputs = []      # [name]
        self.inits = {}       # name -> np.ndarray (float32 or int64)
        self.nodes = []       # [dict(op, inputs, outputs, attrs, id)]
        self.outputs = []     # [name]
        self.shapes = {}      # value name -> tuple
        self.data = {}        # graph input name -> np.ndarray

    def copy(self):
        s = Spec()
        s.inputs = list(self.inputs)
        s.inits = dict(self.inits)
        s.nodes = [dict(n) for n in self.nodes]
        s.outputs = list(self.outputs)
        s.shapes = dict(self.shapes)
        s.data = dict(self.data)
        return s

    def model(self):
        g_in = [helper.make_tensor_value_info(n, F, list(self.shapes[n])) for n in self.inputs]
        g_out = [helper.make_tensor_value_info(n, F, list(self.shapes[n])) for n in self.outputs]
        nodes = [helper.make_node(n["op"], n["inputs"], n["outputs"], name=f"n{n['id']}_{n['op']}",
                                  **n["attrs"]) for n in self.nodes]
        inits = [numpy_helper.from_array(a, k) for k, a in self.inits.items()]
        g = helper.make_graph(nodes, "difftest", g_in, g_out, inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m

    def text(self):
        """One line per node: the readable form the findings record."""
        lines = [f"input {n} {list(self.shapes[n])}" for n in self.inputs]
        for n in self.nodes:
            attrs = " ".join(f"{k}={v}" for k, v in n["attrs"].items())
            ins = ", ".join(i if i not in self.inits else f"{i}(const {list(self.inits[i].shape)})"
                            for i in n["inputs"])
            outs = ", ".join(f"{o}{list(self.shapes.get(o, ()))}" for o in n["outputs"])
            lines.append(f"{outs} = {n['op']}({ins}) {attrs}".rstrip())
        lines.append("output " + ", ".join(self.outputs))
        return "\n".join(lines) + "\n"


def infer_shapes(spec, names):
    """Shapes of `names` by ONNX's shape inference (strict: an invalid node raises)."""
    m = spec.model()
    del m.graph.output[:]
    m.graph.output.extend(helper.make_tensor_value_info(n, F, None) for n in names)
    m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    known = {}
    for vi in list(m.graph.value_info) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            known[vi.name] = tuple(d.dim_value for d in dims)
    return {n: known.get(n) for n in names}


def write_case(spec, outdir):
    """model.onnx, in_<input>.npy and graph.txt under outdir."""
    os.makedirs(outdir, exist_ok=True)
    m = spec.model()
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(outdir, "model.onnx"))
    for n in spec.inputs:
        np.save(os.path.join(outdir, f"in_{n}.npy"), spec.data[n].astype(np.float32))
    with open(os.path.join(outdir, "graph.txt"), "w") as f:
        f.write(spec.text())


class Gen:
    """Builds one graph. dim_override: {draw index: value} replaces dims draws (minimiser)."""

    def __init__(self, seed, dim_override=None):
        self.seed = seed
        self.rs = np.random.default_rng([seed, 1])
        self.rd = np.random.default_rng([seed, 2])
        self.override = dim_override or {}
        self.dims = []        # every dims draw, in order (the minimiser shrinks these)
        self.spec = Spec()
        self.pool = []        # values a step may consume, oldest first
        self.counter = 0
        self.npu_only = False  # build() draws it: only operators with an NPU kernel

    # ------------------------------------------------------------------ random helpers
    def pick(self, items):
        return items[int(self.rs.integers(len(items)))]

    def chance(self, p):
        return bool(self.rs.random() < p)

    def dim(self, choices):
        v = int(choices[int(self.rd.integers(len(choices)))])
        k = len(self.dims)
        v = int(self.override.get(k, v))
        self.dims.append(v)
        return v

    def weights(self, shape, scale=None, positive=False):
        rw = np.random.default_rng([self.seed, 3, len(self.spec.inits)])
        if positive:
            a = rw.uniform(0.5, 1.5, size=shape)
        else:
            fan = scale if scale is not None else 1.0
            a = rw.standard_normal(size=shape) * fan
        name = f"w{len(self.spec.inits)}"
        self.spec.inits[name] = a.astype(np.float32)
        return name

    def const_i64(self, values):
        name = f"k{len(self.spec.inits)}"
        self.spec.inits[name] = np.array(values, dtype=np.int64)
        return name

    def const_f(self, values):
        name = f"c{len(self.spec.inits)}"
        self.spec.inits[name] = np.array(values, dtype=np.float32)
        return name

    def node(self, op, inputs, nout=1, **attrs):
        outs = []
        for _ in range(nout):
            outs.append(f"v{self.counter}")
            self.counter += 1
        self.spec.nodes.append(dict(op=op, inputs=list(inputs), outputs=outs, attrs=attrs,
                                    id=len(self.spec.nodes)))
        return outs[0] if nout == 1 else outs

    def shape(self, v):
        if v not in self.spec.shapes:  # made earlier in this step: infer what is missing
            missing = [o for n in self.spec.nodes for o in n["outputs"]
                       if o not in self.spec.shapes]
            got = infer_shapes(self.spec, missing)
            if got.get(v) is None:
                raise Infeasible
            self.spec.shapes.update({k: s for k, s in got.items() if s is not None})
        return self.spec.shapes[v]

    def add_input(self, shape):
        name = f"in{len(self.spec.inputs)}"
        self.spec.inputs.append(name)
        self.spec.shapes[name] = tuple(shape)
        rng = np.random.default_rng([self.seed, 4, len(self.spec.inputs)])
        self.spec.data[name] = rng.standard_normal(size=shape).astype(np.float32)
        self.pool.append(name)
        return name

    def choose(self, rank=None, min_rank=1):
        """A value from the pool, recent ones likelier (chains), optionally of a given rank."""
        cand = [v for v in self.pool if (rank is None or len(self.shape(v)) == rank)
                and len(self.shape(v)) >= min_rank]
        if not cand:
            raise Infeasible
        w = np.arange(1, len(cand) + 1, dtype=np.float64) ** 2
        return cand[int(self.rs.choice(len(cand), p=w / w.sum()))]

    # ------------------------------------------------------------------ steps
    def act(self, x):
        if self.npu_only:
            op = self.pick(["Relu", "Relu", "Clip6", "Sigmoid", "Tanh", "HardSigmoid",
                            "HardSwish", "Neg"])
        else:
            op = self.pick(["Relu", "Relu", "Clip6", "LeakyRelu", "Sigmoid", "Tanh",
                            "HardSigmoid", "HardSwish", "Elu", "Abs", "Neg", "Softsign", "Gelu"])
        if op == "Clip6":
            return self.node("Clip", [x, self.const_f(0.0), self.const_f(6.0)])
        if op == "LeakyRelu":
            return self.node(op, [x], alpha=float(self.pick([0.01, 0.1, 0.2])))
        if op == "Elu":
            return self.node(op, [x], alpha=1.0)
        if op == "HardSigmoid":
            return self.node(op, [x], alpha=0.2, beta=0.5)
        if op == "Gelu":  # the Erf form BERT exports: x * 0.5 * (1 + erf(x / sqrt 2))
            e = self.node("Erf", [self.node("Div", [x, self.const_f(1.4142135)])])
            h = self.node("Mul", [self.node("Add", [e, self.const_f(1.0)]), self.const_f(0.5)])
            return self.node("Mul", [x, h])
        return self.node(op, [x])

    def conv(self, x, oc=None, k=None, stride=None, same=False, group=None):
        n, c, h, w = self.shape(x)
        k = k if k is not None else self.pick([1, 1, 3, 3, 3, 5, 2])
        stride = stride if stride is not None else self.pick([1, 1, 1, 2, 3])
        dil = 1 if same or k == 1 or not self.chance(0.2) else self.pick([2, 3])
        if group is None:
            kind = self.pick(["dense", "dense", "dense", "depthwise", "grouped"])
            divs = [g for g in range(2, c + 1) if c % g == 0]
            group = {"dense": 1, "depthwise": c,
                     "grouped": self.pick(divs) if divs else 1}[kind]
        if oc is None:
            oc = self.dim(CHANNELS)
            if group > 1:
                oc = group * max(1, oc // group) if group != c else c * self.pick([1, 1, 2])
        if oc % group:
            raise Infeasible
        ext = dil * (k - 1) + 1
        if same:
            lo, hi = (ext - 1) // 2, ext - 1 - (ext - 1) // 2
            pads = [lo, lo, hi, hi]
        else:
            p = self.pick([0, 0, 1, 2])
            pads = [p, p, p, p] if self.chance(0.8) else [p, 0, 0, p]
        if h + pads[0] + pads[2] < ext or w + pads[1] + pads[3] < ext:
            raise Infeasible
        fan = (c // group) * k * k
        wt = self.weights((oc, c // group, k, k), scale=1.0 / np.sqrt(fan))
        ins = [x, wt]
        if self.chance(0.7):
            ins.append(self.weights((oc,), scale=0.1))
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                         pads=pads, dilations=[dil, dil], group=group)

    def batchnorm(self, x):
        c = self.shape(x)[1]
        return self.node("BatchNormalization",
                         [x, self.weights((c,), positive=True), self.weights((c,), scale=0.1),
                          self.weights((c,), scale=0.1), self.weights((c,), positive=True)],
                         epsilon=1e-5)

    def step_conv_block(self):
        x = self.choose(rank=4)
        y = self.conv(x)
        if self.chance(0.4):
            y = self.batchnorm(y)
        if self.chance(0.7):
            y = self.act(y)
        return [y]

    def step_residual(self):
        # conv(+bn) -> add of the block's input -> relu: the conv+add+relu fusion.
        x = self.choose(rank=4)
        c = self.shape(x)[1]
        y = self.conv(x, oc=c, stride=1, same=True, group=self.pick([1, 1, c]))
        if self.chance(0.4):
            y = self.batchnorm(y)
        if self.chance(0.3):
            y = self.act(y)
            y = self.conv(y, oc=c, stride=1, same=True, group=1)
        y = self.node("Add", [y, x] if self.chance(0.5) else [x, y])
        return [self.node("Relu", [y]) if self.chance(0.8) else y]

    def step_pool(self):
        x = self.choose(rank=4)
        _, _, h, w = self.shape(x)
        kind = self.pick(["MaxPool", "AveragePool", "GlobalAveragePool"] + (
            [] if self.npu_only else ["GlobalMaxPool"]))
        if kind.startswith("Global"):
            return [self.node(kind, [x])]
        k = self.pick([2, 3, 3, 1])
        s = self.pick([1, 2, 2, 3])
        p = self.pick([0, 0, 1]) if k > 1 else 0
        if h + 2 * p < k or w + 2 * p < k:
            raise Infeasible
        ceil = int(self.chance(0.3))
        # A ceil-mode window that would start in the bottom/right padding is dropped by npuc
        # (and PyTorch) but counted by ONNX 1.12's shape inference, which npuc checks against
        # at import: not a case the two can agree on, so floor mode there.
        if any((-(-(n + 2 * p - k) // s)) * s >= n + p for n in (h, w)):
            ceil = 0
        attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p], ceil_mode=ceil)
        if kind == "AveragePool":
            attrs["count_include_pad"] = int(self.chance(0.5))
        return [self.node(kind, [x], **attrs)]

    def bcast_shape(self, shape):
        """A shape that broadcasts to `shape`: per channel, scalar, last axis, full, ..."""
        r = len(shape)
        kind = self.pick(["channel", "scalar", "last", "full", "full", "ones", "lead"])
        if kind == "scalar":
            return ()
        if kind == "last":
            return (shape[-1],)
        if kind == "channel" and r >= 2:
            return (1, shape[1]) + (1,) * (r - 2)
        if kind == "ones":
            return tuple(d if self.chance(0.5) else 1 for d in shape)
        if kind == "lead" and r >= 2:
            return tuple(shape[1:])
        return tuple(shape)

    def step_binary_const(self):
        x = self.choose()
        shape = self.shape(x)
        op = self.pick(["Add", "Mul", "Sub", "Div", "Max", "Min", "Add", "Mul"])
        b = self.bcast_shape(shape)
        if op == "Div":  # a divisor away from zero
            rw = np.random.default_rng([self.seed, 5, len(self.spec.inits)])
            c = self.const_f(rw.uniform(0.5, 2.0, size=b) * rw.choice([-1, 1], size=b))
        else:
            c = self.weights(b, scale=0.5)
        ins = [x, c] if op == "Div" or self.chance(0.7) else [c, x]
        return [self.node(op, ins)]

    def step_binary_pair(self):
        # Two activations: one derived from the other by a broadcast-producing op (SE gate,
        # residual, mean-subtraction) so that their shapes are compatible.
        x = self.choose()
        shape = self.shape(x)
        r = len(shape)
        how = self.pick(["act", "reduce", "gap"]) if r == 4 else self.pick(["act", "reduce"])
        if how == "act":
            y = self.act(x)
        elif how == "gap":
            y = self.node("GlobalAveragePool", [x])
            if self.chance(0.6):
                c = shape[1]
                y = self.node("Sigmoid", [self.conv(y, oc=c, k=1, stride=1, group=1)])
        else:
            axes = sorted(set(int(a) for a in self.rs.choice(r, size=self.rs.integers(1, r + 1))))
            y = self.node("ReduceMean", [x], axes=axes, keepdims=1)
        op = self.pick(["Add", "Mul", "Sub", "Max", "Min", "Sum"])
        if op == "Sum":
            return [self.node("Sum", [x, y, x] if self.chance(0.5) else [x, y])]
        return [self.node(op, [x, y] if self.chance(0.5) else [y, x])]

    def step_concat(self):
        x = self.choose(min_rank=2)
        shape = self.shape(x)
        r = len(shape)
        axis = int(self.rs.integers(r))
        parts = [x]
        for _ in range(int(self.rs.integers(1, 3))):
            if r == 4 and axis == 1 and self.chance(0.6):
                parts.append(self.conv(x, stride=1, same=True))
            elif self.chance(0.5):
                parts.append(self.act(x))
            else:
                parts.append(self.node("Mul", [x, self.weights((), scale=1.0)]))
        if self.chance(0.3):
            parts = parts[::-1]
        return [self.node("Concat", parts, axis=axis if self.chance(0.7) else axis - r)]

    def step_split(self):
        x = self.choose(min_rank=2)
        shape = self.shape(x)
        axis = int(self.rs.integers(len(shape)))
        n = shape[axis]
        if n < 2:
            raise Infeasible
        k = min(n, int(self.rs.integers(2, 4)))
        if self.chance(0.5) and n % k == 0:
            sizes = [n // k] * k
        else:
            cuts = sorted(self.rs.choice(np.arange(1, n), size=k - 1, replace=False))
            sizes = list(np.diff([0] + [int(c) for c in cuts] + [n]))
        outs = self.node("Split", [x, self.const_i64(sizes)], nout=k, axis=axis)
        return list(outs)

    def step_shuffle(self):
        # ShuffleNet's channel shuffle: [N,C,H,W] -> [N,g,C/g,H,W] -> swap -> [N,C,H,W].
        x = self.choose(rank=4)
        n, c, h, w = self.shape(x)
        divs = [g for g in range(2, c) if c % g == 0]
        if not divs:
            raise Infeasible
        g = self.pick(divs)
        y = self.node("Reshape", [x, self.const_i64([n, g, c // g, h, w])])
        y = self.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
        return [self.node("Reshape", [y, self.const_i64([n, c, h, w] if self.chance(0.7)
                                                         else [n, -1, h, w])])]

    def step_layout(self):
        x = self.choose()
        shape = self.shape(x)
        r = len(shape)
        kind = self.pick(["transpose", "transpose", "flatten", "reshape", "unsqueeze",
                          "squeeze", "slice", "pad", "tile", "double_transpose"])
        if kind == "transpose" and r >= 2:
            return [self.node("Transpose", [x], perm=[int(p) for p in self.rs.permutation(r)])]
        if kind == "double_transpose" and r >= 2:
            y = self.node("Transpose", [x], perm=[int(p) for p in self.rs.permutation(r)])
            return [self.node("Transpose", [y], perm=[int(p) for p in self.rs.permutation(r)])]
        if kind == "flatten" and r >= 2:
            return [self.node("Flatten", [x], axis=int(self.rs.integers(0, r + 1)))]
        if kind == "reshape":
            total = int(np.prod(shape))
            if r == 4 and self.chance(0.5):  # NCHW -> [N, C, HW] -> [N, HW, C]: a sequence
                y = self.node("Reshape", [x, self.const_i64([shape[0], shape[1], -1])])
                return [self.node("Transpose", [y], perm=[0, 2, 1])]
            divs = [d for d in range(1, total + 1) if total % d == 0]
            a = self.pick(divs)
            new = [a, total // a] if self.chance(0.5) else [1, a, total // a]
            if self.chance(0.3):
                new[int(self.rs.integers(len(new)))] = -1
            return [self.node("Reshape", [x, self.const_i64(new)])]
        if kind == "unsqueeze" and r <= 4:
            return [self.node("Unsqueeze", [x, self.const_i64([int(self.rs.integers(r + 1))])])]
        if kind == "squeeze":
            ones = [i for i, d in enumerate(shape) if d == 1]
            if not ones or r == 1:
                raise Infeasible
            return [self.node("Squeeze", [x, self.const_i64([self.pick(ones)])])]
        if kind == "slice":
            axis = int(self.rs.integers(r))
            n = shape[axis]
            step = self.pick([1, 1, 2, 3])
            start = int(self.rs.integers(0, n))
            end = int(self.rs.integers(start + 1, n + 1)) if self.chance(0.7) else n + 5
            return [self.node("Slice", [x, self.const_i64([start]), self.const_i64([end]),
                                        self.const_i64([axis]), self.const_i64([step])])]
        if kind == "pad":
            pads = [int(self.rs.integers(0, 3)) if i >= r - 2 and self.chance(0.6) else 0
                    for i in range(2 * r)]
            return [self.node("Pad", [x, self.const_i64(pads), self.const_f(
                float(self.pick([0.0, 0.0, -1.5])))], mode="constant")]
        if kind == "tile":
            reps = [self.pick([1, 1, 2]) for _ in range(r)]
            return [self.node("Tile", [x, self.const_i64(reps)])]
        raise Infeasible

    def step_reduce(self):
        x = self.choose()
        r = len(self.shape(x))
        op = self.pick(["ReduceMean", "ReduceSum", "ReduceSumSquare"] if self.npu_only else
                       ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                        "ReduceL2"])
        axes = sorted(set(int(a) for a in self.rs.choice(r, size=self.rs.integers(1, r + 1))))
        keep = int(self.chance(0.5))
        if keep == 0 and len(axes) == r:
            keep = 1
        if op == "ReduceSum":
            return [self.node(op, [x, self.const_i64(axes)], keepdims=keep)]
        return [self.node(op, [x], axes=axes, keepdims=keep)]

    def step_softmax(self):
        x = self.choose()
        r = len(self.shape(x))
        op = self.pick(["Softmax", "Softmax", "LogSoftmax"])
        return [self.node(op, [x], axis=int(self.rs.integers(-r, r)))]

    def step_act(self):
        return [self.act(self.choose())]

    def step_matmul(self):
        x = self.choose(min_rank=2)
        shape = self.shape(x)
        k = shape[-1]
        n = self.dim(FEATURES)
        kind = self.pick(["matmul", "matmul_bias", "gemm", "scaled", "pair"])
        if kind == "gemm" and len(shape) == 2:
            tb = int(self.chance(0.5))
            b = self.weights((n, k) if tb else (k, n), scale=1.0 / np.sqrt(k))
            ins = [x, b] + ([self.weights((n,), scale=0.1)] if self.chance(0.7) else [])
            return [self.node("Gemm", ins, transB=tb, alpha=float(self.pick([1.0, 0.5])),
                              beta=float(self.pick([1.0, 2.0])))]
        if kind == "pair":  # two activations: x @ x^T (attention scores)
            r = len(shape)
            perm = list(range(r - 2)) + [r - 1, r - 2]
            y = self.node("Transpose", [x], perm=perm)
            s = self.node("MatMul", [x, y])
            return [self.node("Softmax", [s], axis=-1) if not self.npu_only and self.chance(0.5)
                    else s]
        if kind == "scaled":  # a scalar scale of the operand: moved onto the product
            x = self.node("Mul", [x, self.const_f(float(self.pick([0.125, 0.5, 2.0])))])
        y = self.node("MatMul", [x, self.weights((k, n), scale=1.0 / np.sqrt(k))])
        if kind == "matmul_bias":
            y = self.node("Add", [y, self.weights((n,), scale=0.1)])
            if self.chance(0.5):
                y = self.act(y)
        return [y]

    def step_layernorm(self):
        x = self.choose(min_rank=2)
        shape = self.shape(x)
        axis = self.pick([-1, -1, len(shape) - 2])
        norm = shape[axis:]
        kind = self.pick(["LayerNormalization", "LayerNormalization", "InstanceNormalization"])
        # Normalising a few values divides by a spread that may be near its epsilon, where an
        # fp16 rounding upstream changes the result by more than any tolerance (2 values: 12%
        # of the range, found by the campaign): at least 8 values per normalisation.
        if kind == "InstanceNormalization" and len(shape) >= 3:
            if int(np.prod(shape[2:])) < 8:
                raise Infeasible
            c = shape[1]
            return [self.node(kind, [x, self.weights((c,), positive=True),
                                     self.weights((c,), scale=0.1)], epsilon=1e-5)]
        if int(np.prod(norm)) < 8:
            raise Infeasible
        return [self.node("LayerNormalization", [x, self.weights(norm, positive=True),
                                                 self.weights(norm, scale=0.1)],
                          axis=axis, epsilon=1e-5)]

    def step_space(self):
        x = self.choose(rank=4)
        n, c, h, w = self.shape(x)
        kind = self.pick(["d2s", "s2d", "resize"])
        if kind == "d2s" and c % 4 == 0:
            return [self.node("DepthToSpace", [x], blocksize=2,
                              mode=self.pick(["DCR", "CRD"]))]
        if kind == "s2d" and h % 2 == 0 and w % 2 == 0:
            return [self.node("SpaceToDepth", [x], blocksize=2)]
        if kind == "resize":
            return [self.node("Resize", [x, "", self.const_f([1.0, 1.0, 2.0, 2.0])],
                              mode="nearest")]
        raise Infeasible

    STEPS = [("conv_block", 6), ("residual", 3), ("pool", 3), ("binary_const", 4),
             ("binary_pair", 3), ("concat", 3), ("split", 2), ("shuffle", 2), ("layout", 4),
             ("reduce", 2), ("softmax", 1), ("act", 2), ("matmul", 4), ("layernorm", 1),
             ("space", 1)]

    # ------------------------------------------------------------------ driver
    def start(self):
        kind = self.pick(["image", "image", "image", "seq", "mat"])
        if kind == "image":
            shape = (self.pick([1, 1, 1, 2]), self.dim(CHANNELS), self.dim(SPATIAL),
                     self.dim(SPATIAL))
        elif kind == "seq":
            shape = (self.pick([1, 2]), self.dim(SEQ), self.dim(FEATURES))
        else:
            shape = (self.dim(SEQ), self.dim(FEATURES))
        shape = list(shape)
        while int(np.prod(shape)) > MAX_ELEMS:  # halve the largest extent (no draw: stable)
            i = int(np.argmax(shape))
            shape[i] = (shape[i] + 1) // 2
        shape = tuple(shape)
        x = self.add_input(shape)
        if self.chance(0.25):  # a second input of the same or a broadcastable shape
            self.add_input(self.bcast_shape(shape) or (1,))
        return x

    def try_step(self, name):
        snap = (len(self.spec.nodes), dict(self.spec.inits), self.counter)
        try:
            new = getattr(self, "step_" + name)()
            created = [o for n in self.spec.nodes[snap[0]:] for o in n["outputs"]]
            shapes = infer_shapes(self.spec, created)
            if any(s is None or 0 in s or int(np.prod(s)) > MAX_ELEMS
                   for s in shapes.values()):
                raise Infeasible
        except (Infeasible, onnx.shape_inference.InferenceError, ValueError):
            for n in self.spec.nodes[snap[0]:]:
                for o in n["outputs"]:
                    self.spec.shapes.pop(o, None)
            del self.spec.nodes[snap[0]:]
            self.spec.inits = snap[1]
            self.counter = snap[2]
            return False
        self.spec.shapes.update(shapes)
        self.pool.extend(new)
        return True

    # Operators the NPU has no kernel for on npu-base (docs/OPERATORS.md): a graph of only the
    # others stays on the NPU, where tiny groups next to CPU groups would move to the CPU by
    # the placement's cost model (device crossings cost more than the groups' work).
    CPU_STEPS = {"softmax", "layernorm", "space"}

    def build(self):
        self.npu_only = self.chance(0.6)
        self.start()
        steps_ok = [(n, w) for n, w in self.STEPS
                    if not (self.npu_only and n in self.CPU_STEPS)]
        names = [n for n, _ in steps_ok]
        weights = np.array([w for _, w in steps_ok], dtype=np.float64)
        steps = int(self.rs.integers(1, 11))
        done = tries = 0
        while done < steps and tries < 6 * steps:
            tries += 1
            done += self.try_step(names[int(self.rs.choice(len(names), p=weights / weights.sum()))])
        finish(self.spec)
        return self.spec


def finish(spec):
    """Every value no node consumes becomes a graph output (so no node is dead); unused
    inputs are dropped."""
    used = {i for n in spec.nodes for i in n["inputs"]}
    produced = [o for n in spec.nodes for o in n["outputs"]]
    outs = [o for o in produced if o not in used]
    spec.outputs = [o for o in spec.outputs if o in produced or o in spec.inputs]
    spec.outputs += [o for o in outs if o not in spec.outputs]
    if not spec.outputs:  # a graph of inputs only: the identity of the first input
        spec.outputs = [spec.inputs[0]]
    spec.inputs = [i for i in spec.inputs if i in used or i in spec.outputs]
    keep = {i for n in spec.nodes for i in n["inputs"]}
    spec.inits = {k: v for k, v in spec.inits.items() if k in keep}


def generate(seed, dim_override=None):
    """(spec, number of dims draws) for the seed."""
    g = Gen(seed, dim_override)
    spec = g.build()
    return spec, list(g.dims)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_graph.py SEED OUTDIR")
    spec, _ = generate(int(sys.argv[1]))
    write_case(spec, sys.argv[2])
    sys.stdout.write(spec.text())


if __name__ == "__main__":
    main()
