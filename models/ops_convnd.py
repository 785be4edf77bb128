"""ops_convnd.py - single-operator cases for 1-D and 3-D convolution and pooling and the
opset-17 NN operators beyond them (MeanVarianceNormalization, MaxUnpool, RoiAlign, MaxRoiPool,
GridSample, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). Imported by make_ops.py (family
"convnd"). Oracles: torch (conv1d/conv3d, conv_transpose1d/3d, max/avg_pool1d/3d, max_unpool2d,
grid_sample, nll_loss, cross_entropy), torchvision (roi_align, roi_pool) and numpy written here
from the operators' definitions (LpPool, MaxPool's Indices, MeanVarianceNormalization, RoiAlign's
max mode as ONNX Runtime defines it).
"""
import itertools
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def window_nd(x, k, s, p, d, fn):
    """Naive N-d window over x [N, C, spatial...] with pads p (begins, then ends); fn(list of
    [N, C] arrays) gives the value of one window."""
    r = len(k)
    sp = x.shape[2:]
    outs = [(sp[i] + p[i] + p[r + i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(r)]
    out = np.zeros(x.shape[:2] + tuple(outs), np.float64)
    for o in itertools.product(*[range(e) for e in outs]):
        vals = []
        for t in itertools.product(*[range(e) for e in k]):
            pos = [o[i] * s[i] - p[i] + t[i] * d[i] for i in range(r)]
            if all(0 <= pos[i] < sp[i] for i in range(r)):
                vals.append(x[(slice(None), slice(None)) + tuple(pos)].astype(np.float64))
        out[(slice(None), slice(None)) + o] = fn(vals)
    return out


def maxpool_indices(x, k, s, p, column_major):
    """MaxPool's Indices (no dilation, no ceil): the flat index into the whole tensor of each
    window's first maximum; column_major counts the spatial axes from the last (storage_order 1)."""
    r = len(k)
    sp = x.shape[2:]
    outs = [(sp[i] + p[i] + p[r + i] - k[i]) // s[i] + 1 for i in range(r)]
    idx = np.zeros(x.shape[:2] + tuple(outs), np.int64)
    plane = int(np.prod(sp))
    for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*[range(e) for e in outs]):
            best, arg = -np.inf, -1
            for t in itertools.product(*[range(e) for e in k]):
                pos = [o[i] * s[i] - p[i] + t[i] for i in range(r)]
                if all(0 <= pos[i] < sp[i] for i in range(r)) and x[(b, c) + tuple(pos)] > best:
                    best = x[(b, c) + tuple(pos)]
                    dims = list(sp)
                    if column_major:
                        pos, dims = pos[::-1], dims[::-1]
                    arg = int(np.ravel_multi_index(pos, dims))
            idx[(b, c) + o] = (b * x.shape[1] + c) * plane + arg
    return idx


def mvn(x, axes):
    x = x.astype(np.float64)
    m = x.mean(axis=tuple(axes), keepdims=True)
    v = ((x - m) ** 2).mean(axis=tuple(axes), keepdims=True)
    return (x - m) / (np.sqrt(v) + 1e-9)


def roi_align_max(x, rois, bidx, oh, ow, ratio, scale, half_pixel):
    """RoiAlign mode=max as ONNX Runtime computes it: per sample, the largest of its four
    bilinear corner terms (weight * value); per bin, the largest sample."""
    R, C, H, W = rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
    out = np.zeros((R, C, oh, ow))
    off = 0.5 if half_pixel else 0.0
    for r in range(R):
        x0, y0 = rois[r, 0] * scale - off, rois[r, 1] * scale - off
        rw, rh = rois[r, 2] * scale - off - x0, rois[r, 3] * scale - off - y0
        bh, bw = rh / oh, rw / ow
        for ph, pw in itertools.product(range(oh), range(ow)):
            best = None
            for iy, ix in itertools.product(range(ratio), range(ratio)):
                y = y0 + ph * bh + (iy + 0.5) * bh / ratio
                xx = x0 + pw * bw + (ix + 0.5) * bw / ratio
                terms = np.zeros((4, C))
                if -1 <= y <= H and -1 <= xx <= W:
                    y, xx = max(y, 0.0), max(xx, 0.0)
                    yl, xl = min(int(y), H - 1), min(int(xx), W - 1)
                    yh, xh = min(yl + 1, H - 1), min(xl + 1, W - 1)
                    ly = 0.0 if int(y) >= H - 1 else y - yl
                    lx = 0.0 if int(xx) >= W - 1 else xx - xl
                    img = x[int(bidx[r])]
                    terms = np.stack([(1 - ly) * (1 - lx) * img[:, yl, xl],
                                      (1 - ly) * lx * img[:, yl, xh],
                                      ly * (1 - lx) * img[:, yh, xl], ly * lx * img[:, yh, xh]])
                m = terms.max(axis=0)
                best = m if best is None else np.maximum(best, m)
            out[r, :, ph, pw] = best
    return out


def add(case, rnd):
    import torch
    import torch.nn.functional as tf
    import torchvision.ops as tv
    T = torch.from_numpy
    fam = "convnd"

    # ----- 1-D: conv, transposed conv, pools (the NPU runs conv/max/avg as 2-D, H = 1: every
    # group of those cases must run there, the Unsqueeze/Squeeze views included) -----
    x1 = rnd(2, 4, 11)
    w1, b1 = rnd(6, 2, 3), rnd(6)
    case("Conv1d_group_stride_pads", fam, "Conv", [("x", x1), ("c", w1), ("c", b1)],
         {"pads": [2, 1], "strides": [2], "group": 2},
         lambda x, w, b: tf.conv1d(tf.pad(T(x), (2, 1)), T(w), T(b), stride=2, groups=2).numpy(),
         placement="npu")
    # SAME_UPPER with dilation 2, kernel 3 (extent 5), stride 1: total pad 4 -> 2 / 2.
    case("Conv1d_dilated_same_upper", fam, "Conv", [("x", x1), ("c", rnd(3, 4, 3))],
         {"auto_pad": "SAME_UPPER", "dilations": [2]},
         lambda x, w: tf.conv1d(T(x), T(w), padding=2, dilation=2).numpy(), placement="npu")
    case("ConvTranspose1d", fam, "ConvTranspose", [("x", x1), ("c", rnd(4, 3, 3)), ("c", b1)],
         {"strides": [2], "pads": [1, 1], "output_padding": [1], "group": 2},
         lambda x, w, b: tf.conv_transpose1d(T(x), T(w), T(b), stride=2, padding=1,
                                             output_padding=1, groups=2).numpy())
    case("MaxPool1d_ceil", fam, "MaxPool", [("x", x1)],
         {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
         lambda x: tf.max_pool1d(T(x), 3, 2, 1, ceil_mode=True).numpy(), placement="npu")
    case("MaxPool1d_dilated", fam, "MaxPool", [("x", x1)],
         {"kernel_shape": [3], "dilations": [2]},
         lambda x: tf.max_pool1d(T(x), 3, 1, dilation=2).numpy())
    case("AveragePool1d_include_pad", fam, "AveragePool", [("x", x1)],
         {"kernel_shape": [4], "strides": [3], "pads": [1, 2], "count_include_pad": 1},
         lambda x: window_nd(x, [4], [3], [1, 2], [1], lambda v: sum(v) / 4), placement="npu")
    case("AveragePool1d_same_lower", fam, "AveragePool", [("x", x1)],
         {"kernel_shape": [4], "strides": [2], "auto_pad": "SAME_LOWER"},
         # out ceil(11/2) = 6; total pad (6-1)*2+4-11 = 3 -> 2 before, 1 after
         lambda x: window_nd(x, [4], [2], [2, 1], [1], lambda v: sum(v) / len(v)), placement="npu")
    case("LpPool1d", fam, "LpPool", [("x", x1)], {"kernel_shape": [3], "strides": [2], "p": 3},
         lambda x: window_nd(x, [3], [2], [0, 0], [1],
                             lambda v: sum(np.abs(a) ** 3 for a in v) ** (1 / 3)))
    case("GlobalAveragePool1d", fam, "GlobalAveragePool", [("x", x1)], {},
         lambda x: x.mean(axis=2, keepdims=True), placement="npu")

    # ----- 3-D (conv and pools on the CPU, not the NPU's loop-nest kernel) -----
    x3 = rnd(1, 2, 4, 5, 6)
    case("Conv3d", fam, "Conv", [("x", x3), ("c", rnd(3, 2, 2, 3, 3)), ("c", rnd(3))],
         {"strides": [1, 2, 1], "pads": [1, 0, 1, 0, 1, 2], "dilations": [1, 1, 2]},
         lambda x, w, b: tf.conv3d(tf.pad(T(x), (1, 2, 0, 1, 1, 0)), T(w), T(b),
                                   stride=(1, 2, 1), dilation=(1, 1, 2)).numpy(), placement="cpu")
    case("ConvTranspose3d", fam, "ConvTranspose", [("x", x3), ("c", rnd(2, 2, 2, 2, 3))],
         {"strides": [2, 1, 2], "dilations": [1, 2, 1], "pads": [0, 1, 1, 1, 0, 0]},
         lambda x, w: tf.conv_transpose3d(T(x), T(w), stride=(2, 1, 2), dilation=(1, 2, 1))
         .numpy()[:, :, 0:-1, 1:, 1:])
    case("MaxPool3d_ceil_dilated", fam, "MaxPool", [("x", x3)],
         {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "dilations": [1, 2, 1],
          "ceil_mode": 1},
         lambda x: tf.max_pool3d(T(x), 2, 2, dilation=(1, 2, 1), ceil_mode=True).numpy(),
         placement="cpu")
    case("AveragePool3d_pads", fam, "AveragePool", [("x", x3)],
         {"kernel_shape": [3, 2, 3], "strides": [1, 2, 2], "pads": [1, 1, 1, 1, 0, 1]},
         lambda x: window_nd(x, [3, 2, 3], [1, 2, 2], [1, 1, 1, 1, 0, 1], [1, 1, 1],
                             lambda v: sum(v) / len(v)), placement="cpu")
    case("LpPool3d", fam, "LpPool", [("x", x3)], {"kernel_shape": [2, 2, 3], "p": 2},
         lambda x: window_nd(x, [2, 2, 3], [1, 1, 1], [0] * 6, [1, 1, 1],
                             lambda v: np.sqrt(sum(a * a for a in v))))
    case("GlobalAveragePool3d", fam, "GlobalAveragePool", [("x", x3)], {},
         lambda x: x.mean(axis=(2, 3, 4), keepdims=True))
    case("GlobalMaxPool3d", fam, "GlobalMaxPool", [("x", x3)], {},
         lambda x: x.max(axis=(2, 3, 4), keepdims=True))

    # ----- MaxPool's Indices (flat over the whole tensor; storage_order 1 = column-major) -----
    x2 = rnd(2, 2, 5, 6)
    case("MaxPool_indices", fam, "MaxPool", [("x", x2)],
         {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 0]},
         lambda x: [window_nd(x, [3, 2], [2, 2], [1, 0, 1, 0], [1, 1], lambda v: np.max(v, 0)),
                    maxpool_indices(x, [3, 2], [2, 2], [1, 0, 1, 0], False)],
         outs=2, out_types=[F, I64])
    case("MaxPool3d_indices_colmajor", fam, "MaxPool", [("x", x3)],
         {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "storage_order": 1},
         lambda x: [window_nd(x, [2, 3, 2], [2, 1, 2], [0] * 6, [1] * 3, lambda v: np.max(v, 0)),
                    maxpool_indices(x, [2, 3, 2], [2, 1, 2], [0] * 6, True)],
         outs=2, out_types=[F, I64])

    # ----- MeanVarianceNormalization -----
    xm = rnd(2, 3, 4, 5)
    case("MeanVarianceNormalization", fam, "MeanVarianceNormalization", [("x", xm)], {},
         lambda x: mvn(x, [0, 2, 3]))
    case("MeanVarianceNormalization_axes", fam, "MeanVarianceNormalization", [("x", xm)],
         {"axes": [1, -1]}, lambda x: mvn(x, [1, 3]))

    # ----- MaxUnpool: torch's indices are per (n, c) plane, ONNX's over the whole tensor -----
    def unpool_inputs(h, w):
        pooled, pidx = tf.max_pool2d(T(rnd(1, 2, h, w)), 2, 2, return_indices=True)
        flat = pidx.numpy() + h * w * np.arange(2).reshape(1, 2, 1, 1)
        return pooled.numpy(), pidx, flat.astype(np.int64)
    v, pidx, flat = unpool_inputs(4, 6)  # the default output extent (2 - 1) * 2 + 2 = 4
    case("MaxUnpool", fam, "MaxUnpool", [("x", v), ("c", flat)],
         {"kernel_shape": [2, 2], "strides": [2, 2]},
         lambda v, i, pidx=pidx: tf.max_unpool2d(T(v), pidx, 2, 2).numpy())
    v, pidx, flat = unpool_inputs(5, 7)  # the pooling dropped a row and a column
    case("MaxUnpool_output_shape", fam, "MaxUnpool",
         [("x", v), ("c", flat), ("c", np.array([1, 2, 5, 7], np.int64))],
         {"kernel_shape": [2, 2], "strides": [2, 2]},
         lambda v, i, s, pidx=pidx: tf.max_unpool2d(T(v), pidx, 2, 2, output_size=(5, 7)).numpy())

    # ----- RoiAlign (torchvision: aligned=True is half_pixel), MaxRoiPool (roi_pool) -----
    xr = rnd(2, 3, 8, 9)
    rois = np.array([[0.5, 1.2, 6.3, 5.1], [2.0, 0.0, 8.7, 7.9], [-1.5, 3.0, 4.0, 9.5]],
                    np.float32)
    bidx = np.array([1, 0, 1], np.int64)
    boxes = lambda r, b: T(np.concatenate([b[:, None].astype(np.float32), r], 1))
    case("RoiAlign_half_pixel", fam, "RoiAlign", [("x", xr), ("x", rois), ("c", bidx)],
         {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.75},
         lambda x, r, b: tv.roi_align(T(x), boxes(r, b), (3, 2), 0.75, 2, aligned=True).numpy())
    case("RoiAlign_output_half_pixel_adaptive", fam, "RoiAlign",
         [("x", xr), ("x", rois), ("c", bidx)],
         {"output_height": 2, "output_width": 3, "coordinate_transformation_mode":
          "output_half_pixel"},
         lambda x, r, b: tv.roi_align(T(x), boxes(r, b), (2, 3), 1.0, 0, aligned=False).numpy())
    case("RoiAlign_max", fam, "RoiAlign", [("x", xr), ("x", rois), ("c", bidx)],
         {"output_height": 2, "output_width": 2, "sampling_ratio": 2, "mode": "max"},
         lambda x, r, b: roi_align_max(x.astype(np.float64), r.astype(np.float64), b, 2, 2, 2,
                                       1.0, True))
    rois5 = np.array([[1, 0.4, 1.6, 6.2, 5.5], [0, 2.0, 0.0, 8.0, 7.0], [1, 3.0, 3.0, 3.2, 3.4]],
                     np.float32)
    case("MaxRoiPool", fam, "MaxRoiPool", [("x", xr), ("x", rois5)],
         {"pooled_shape": [3, 2], "spatial_scale": 0.5},
         lambda x, r: tv.roi_pool(T(x), T(r), (3, 2), 0.5).numpy())

    # ----- GridSample (torch.nn.functional.grid_sample) -----
    xg = rnd(2, 2, 5, 6)
    grid = rnd(2, 4, 3, 2, lo=-1.3, hi=1.3)
    for mode, pad, align in [("bilinear", "zeros", 0), ("bilinear", "border", 1),
                             ("nearest", "reflection", 0), ("bicubic", "zeros", 1),
                             ("bicubic", "reflection", 0), ("bilinear", "reflection", 1)]:
        case(f"GridSample_{mode}_{pad}_{'ac' if align else 'noac'}", fam, "GridSample",
             [("x", xg), ("x", grid)], {"mode": mode, "padding_mode": pad, "align_corners": align},
             lambda x, g, mode=mode, pad=pad, align=align: tf.grid_sample(
                 T(x), T(g), mode=mode, padding_mode=pad, align_corners=bool(align)).numpy())

    # ----- losses: integer labels are constants here (fp32 integers at run time) -----
    logits = rnd(3, 5, 2, 2)
    lab = np.array([[[0, 4], [2, 1]], [[3, 3], [1, 0]], [[4, 2], [2, 0]]], np.int64)
    wts = rnd(5, lo=0.2, hi=2.0)
    logp = tf.log_softmax(T(logits), 1).numpy()
    case("NegativeLogLikelihoodLoss_mean_weight", fam, "NegativeLogLikelihoodLoss",
         [("x", logp), ("c", lab), ("c", wts)], {},
         lambda x, t, w: tf.nll_loss(T(x), T(t), T(w)).numpy())
    case("NegativeLogLikelihoodLoss_none_ignore", fam, "NegativeLogLikelihoodLoss",
         [("x", logp), ("c", lab)], {"reduction": "none", "ignore_index": 2},
         lambda x, t: tf.nll_loss(T(x), T(t), reduction="none", ignore_index=2).numpy())
    case("NegativeLogLikelihoodLoss_sum_2d", fam, "NegativeLogLikelihoodLoss",
         [("x", logp[:, :, 0, 0].copy()), ("c", lab[:, 0, 0].copy()), ("c", wts)],
         {"reduction": "sum"},
         lambda x, t, w: tf.nll_loss(T(x), T(t), T(w), reduction="sum").numpy())
    neg = lab.copy()
    neg[0, 0, 1] = neg[2, 1, 0] = -1
    case("SoftmaxCrossEntropyLoss_mean_ignore_neg", fam, "SoftmaxCrossEntropyLoss",
         [("x", logits), ("c", neg), ("c", wts)], {"ignore_index": -1},
         lambda x, t, w: tf.cross_entropy(T(x), T(t), T(w), ignore_index=-1).numpy())
    case("SoftmaxCrossEntropyLoss_none_log_prob", fam, "SoftmaxCrossEntropyLoss",
         [("x", logits), ("c", lab)], {"reduction": "none"},
         lambda x, t: [tf.cross_entropy(T(x), T(t), reduction="none").numpy(),
                       tf.log_softmax(T(x), 1).numpy()], outs=2)


def models(outdir):
    """Multi-node cases: index operands computed at run time (fp32 integers in npuc)."""
    import torch
    import torch.nn.functional as tf
    rng = np.random.default_rng(77)
    out = []

    def model(name, op, nodes, inputs, inits, expect, outputs=("y0",), placement=None):
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        g = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info(k, F, list(v.shape)) for k, v in inputs],
            [helper.make_tensor_value_info(o, F, None) for o in outputs], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, os.path.join(d, "model.onnx"))
        for k, v in inputs:
            np.save(os.path.join(d, f"in_{k}.npy"), v)
        for o, e in zip(outputs, expect):
            np.save(os.path.join(d, f"exp_{o}.npy"), np.asarray(e).astype(np.float32))
        out.append(dict(name=name, family="convnd", op=op, inputs=[k for k, _ in inputs],
                        oracle=True, **({"placement": placement} if placement else {})))

    # 1-D Conv -> Relu -> MaxPool: the Relu moves before the conv's Squeeze (an epilogue), the
    # Squeeze -> Unsqueeze before the pool cancels, and the whole chain runs on the NPU.
    x = rng.uniform(-2, 2, (1, 3, 12)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3)).astype(np.float32)
    model("Conv1d_MaxPool1d", "Conv",
          [helper.make_node("Conv", ["i0", "w"], ["c"], pads=[1, 1]),
           helper.make_node("Relu", ["c"], ["r"]),
           helper.make_node("MaxPool", ["r"], ["y0"], kernel_shape=[2], strides=[2])],
          [("i0", x)], [numpy_helper.from_array(w, "w")],
          [tf.max_pool1d(tf.relu(tf.conv1d(torch.from_numpy(x), torch.from_numpy(w), padding=1)),
                         2, 2).numpy()], placement="npu")
    # MaxPool's Indices feeding MaxUnpool: the unpooled tensor keeps each window's maximum.
    x = rng.uniform(-2, 2, (1, 3, 4, 6)).astype(np.float32)
    pooled, pidx = tf.max_pool2d(torch.from_numpy(x), 2, 2, return_indices=True)
    model("MaxPool_MaxUnpool", "MaxUnpool",
          [helper.make_node("MaxPool", ["i0"], ["p", "idx"], kernel_shape=[2, 2], strides=[2, 2]),
           helper.make_node("MaxUnpool", ["p", "idx"], ["y0"], kernel_shape=[2, 2],
                            strides=[2, 2])],
          [("i0", x)], [], [tf.max_unpool2d(pooled, pidx, 2, 2).numpy()])
    # Labels from a float input through Cast: NegativeLogLikelihoodLoss reads them at run time.
    logits = rng.uniform(-2, 2, (4, 6)).astype(np.float32)
    labels = np.array([5, 0, 3, 3], np.float32)
    model("Cast_SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss",
          [helper.make_node("Cast", ["i1"], ["t"], to=I64),
           helper.make_node("SoftmaxCrossEntropyLoss", ["i0", "t"], ["y0"], reduction="sum")],
          [("i0", logits), ("i1", labels)], [],
          [tf.cross_entropy(torch.from_numpy(logits), torch.from_numpy(labels).long(),
                            reduction="sum").numpy()])
    return out
