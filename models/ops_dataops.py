"""ops_dataops.py - single-operator cases of the data, math and signal operators of opset 17
(family "dataops"): GatherND, ScatterElements/ScatterND/Scatter, OneHot, ReverseSequence,
Compress, Einsum, Det, DFT, STFT, and (folded at import, their inputs being constants) the
window functions, MelWeightMatrix, NonZero, Unique and NonMaxSuppression. Imported by
make_ops.py. Every oracle is numpy (np.einsum, np.linalg.det, np.fft, np.unique, np.nonzero) or
a hand-written loop over the operator's ONNX definition, never npuc's code.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

def I64(*v):
    """An int64 array: I64(3) a scalar, I64(1, 2) a vector, I64([[...]]) nested lists."""
    return np.array(v[0] if len(v) == 1 else v, np.int64)


def gather_nd(x, idx, b=0):
    out = []
    bshape = idx.shape[:b]
    for bi in np.ndindex(*bshape):
        for t in np.ndindex(*idx.shape[b:-1]):
            tup = tuple(int(k) for k in idx[bi + t])
            out.append(x[bi + tup])
    return np.array(out).reshape(idx.shape[:-1] + x.shape[b + idx.shape[-1]:])


REDUCE = {"none": lambda a, u: u, "add": lambda a, u: a + u, "mul": lambda a, u: a * u}


def scatter_elements(x, idx, upd, axis=0, red="none"):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = int(idx[pos])
        out[tuple(dst)] = REDUCE[red](out[tuple(dst)], upd[pos])
    return out


def scatter_nd(x, idx, upd, red="none"):
    out = x.copy()
    for t in np.ndindex(*idx.shape[:-1]):
        dst = tuple(int(k) for k in idx[t])
        out[dst] = REDUCE[red](out[dst], upd[t])
    return out


def one_hot(idx, depth, vals, axis):
    k = np.where(idx < 0, idx + depth, idx).astype(np.int64)
    hot = (np.arange(depth).reshape([1] * idx.ndim + [depth]) == k[..., None])
    return np.moveaxis(np.where(hot, vals[1], vals[0]), -1, axis)


def reverse_sequence(x, lens, batch_axis, time_axis):
    out = x.copy()
    for b, n in enumerate(lens):
        n = int(n)
        sl = [slice(None)] * x.ndim
        sl[batch_axis] = b
        sl[time_axis] = slice(0, n)
        out[tuple(sl)] = np.flip(x[tuple(sl)], axis=time_axis - (batch_axis < time_axis))
    return out


def stft(sig, step, length, window=None):
    w = np.ones(length) if window is None else window
    frames = (sig.shape[1] - length) // step + 1
    out = np.zeros((sig.shape[0], frames, length // 2 + 1, 2))
    for b in range(sig.shape[0]):
        for f in range(frames):
            spec = np.fft.fft(sig[b, f * step:f * step + length, 0] * w)[:length // 2 + 1]
            out[b, f] = np.stack([spec.real, spec.imag], axis=1)
    return out


def cplx(z):
    return np.stack([z.real, z.imag], axis=-1)


def add(case, rnd):
    F = "dataops"
    x = rnd(2, 3, 4)
    # --- GatherND ---
    case("GatherND", F, "GatherND", [("x", x), ("c", I64([[0, 1], [1, -1]]))], {},
         lambda a, i: gather_nd(a, i % np.array(a.shape[:2])))
    bi = I64([[[1], [0], [2]], [[2], [2], [-3]]])
    case("GatherND_batch_dims1", F, "GatherND", [("x", x), ("c", bi)], {"batch_dims": 1},
         lambda a, i: gather_nd(a, i % 3, 1))
    case("GatherND_runtime_indices", F, "GatherND", [("x", x), ("i", I64([[1, 2, 3], [0, 0, 1]]))],
         {}, lambda a, i: gather_nd(a, i))
    # --- ScatterElements / Scatter ---
    d = rnd(3, 4)
    si = I64([[1, 0, 2, -1], [0, 2, 1, 1]])
    u = rnd(2, 4)
    case("ScatterElements_axis0", F, "ScatterElements", [("x", d), ("c", si), ("x", u)], {},
         lambda a, i, v: scatter_elements(a, i % 3, v))
    dup = I64([[1, 1, 3], [0, 0, 0]])
    for red in ("add", "mul"):
        case(f"ScatterElements_axis1_{red}_dup", F, "ScatterElements",
             [("x", d), ("c", dup), ("x", rnd(2, 3))], {"axis": 1, "reduction": red},
             lambda a, i, v, red=red: scatter_elements(a, i, v, 1, red))
    case("ScatterElements_runtime_indices", F, "ScatterElements",
         [("x", d), ("i", I64([[2, 0, 1, 0]])), ("x", rnd(1, 4))], {"axis": 0},
         lambda a, i, v: scatter_elements(a, i, v))
    case("Scatter_opset10", F, "Scatter", [("x", d), ("c", si), ("x", u)], {"axis": 0},
         lambda a, i, v: scatter_elements(a, i % 3, v), opset=10)
    # --- ScatterND ---
    nd = rnd(4, 3, 2)
    case("ScatterND_slices", F, "ScatterND", [("x", nd), ("c", I64([[3], [0]])), ("x", rnd(2, 3, 2))],
         {}, lambda a, i, v: scatter_nd(a, i, v))
    case("ScatterND_elements_add", F, "ScatterND",
         [("x", nd), ("c", I64([[1, 2, 0], [1, 2, 0], [-1, 0, 1]])), ("x", rnd(3))],
         {"reduction": "add"}, lambda a, i, v: scatter_nd(a, i % np.array(a.shape), v, "add"))
    case("ScatterND_mul_runtime", F, "ScatterND",
         [("x", nd), ("i", I64([[2, 1], [0, 0]])), ("x", rnd(2, 2))], {"reduction": "mul"},
         lambda a, i, v: scatter_nd(a, i, v, "mul"))
    # --- OneHot: negative and out-of-range indices (a row of off values) ---
    oi = I64([[0, -1, 5], [2, -4, 1]])
    vals = np.array([-1.0, 3.0], np.float32)
    case("OneHot_last_axis", F, "OneHot", [("i", oi), ("c", I64(4)), ("x", vals)], {},
         lambda i, dp, v: one_hot(i, 4, v, -1))
    case("OneHot_axis0", F, "OneHot", [("i", oi), ("c", np.array([3], np.float32)), ("c", vals)],
         {"axis": 0}, lambda i, dp, v: one_hot(i, 3, v, 0))
    # --- ReverseSequence ---
    rs = rnd(4, 3, 2)
    case("ReverseSequence_time0", F, "ReverseSequence", [("x", rs), ("c", I64(4, 1, 2))], {},
         lambda a, n: reverse_sequence(a, n, 1, 0))
    case("ReverseSequence_batch0", F, "ReverseSequence", [("x", rs), ("i", I64(3, 0, 2, 1))],
         {"batch_axis": 0, "time_axis": 1}, lambda a, n: reverse_sequence(a, n, 0, 1))
    # --- Compress with a constant condition ---
    cond = np.array([True, False, True], bool)
    case("Compress_axis1", F, "Compress", [("x", x), ("c", cond)], {"axis": 1},
         lambda a, c: np.compress(c, a, axis=1))
    case("Compress_flat", F, "Compress", [("x", x), ("c", np.array([0, 1, 1, 0, 1], bool))], {},
         lambda a, c: np.compress(c, a))
    # --- Einsum ---
    A, B, C = rnd(3, 4), rnd(4, 5), rnd(5, 2)
    ein = [("matmul", "ij,jk->ik", [A, B]), ("implicit", "ij,jk", [A, B]),
           ("batch", "bij,bjk->bik", [rnd(2, 3, 4), rnd(2, 4, 2)]),
           ("transpose", "ij->ji", [A]), ("diagonal", "ii->i", [rnd(4, 4)]),
           ("trace_implicit", "ii", [rnd(4, 4)]), ("sum_all", "ij->", [A]),
           ("outer", "i,j->ij", [rnd(3), rnd(4)]), ("chain3", "ij,jk,kl->il", [A, B, C]),
           ("ellipsis_bcast", "...ij,...jk->...ik", [rnd(2, 1, 3, 4), rnd(1, 5, 4, 2)]),
           ("batch_diag_spaces", "b i i -> b i", [rnd(2, 3, 3)]),
           ("upper_case", "Ab,bC->CA", [A, B])]
    for name, eq, ops in ein:
        case(f"Einsum_{name}", F, "Einsum", [("x", o) for o in ops], {"equation": eq},
             lambda *v, eq=eq: np.einsum(eq.replace(" ", ""), *[t.astype(np.float64) for t in v]))
    # --- Det ---
    case("Det_2d", F, "Det", [("x", rnd(3, 3))], {}, lambda a: np.linalg.det(a.astype(np.float64)))
    sing = np.array([[[1, 2, 3], [2, 4, 6], [0, 1, 1]], [[0, 1, 0], [1, 0, 0], [0, 0, 2]]],
                    np.float32)
    case("Det_batch_singular_pivot", F, "Det", [("x", sing)], {},
         lambda a: np.linalg.det(a.astype(np.float64)))
    case("Det_4d", F, "Det", [("x", rnd(2, 2, 4, 4))], {},
         lambda a: np.linalg.det(a.astype(np.float64)))
    # --- DFT (opset 17: axis attribute) ---
    sig = rnd(2, 6, 3, 1)
    case("DFT_real_axis1", F, "DFT", [("x", sig)], {"axis": 1},
         lambda a: cplx(np.fft.fft(a[..., 0].astype(np.float64), axis=1)))
    csig = rnd(2, 5, 2)
    case("DFT_complex_inverse", F, "DFT", [("x", csig)], {"axis": 1, "inverse": 1},
         lambda a: cplx(np.fft.ifft(a[..., 0] + 1j * a[..., 1], axis=1)))
    case("DFT_onesided_padded", F, "DFT", [("x", sig), ("c", I64(8))],
         {"axis": 2, "onesided": 1},
         lambda a, n: cplx(np.fft.rfft(a[..., 0].astype(np.float64), n=8, axis=2)))
    # --- STFT ---
    s = rnd(2, 20, 1)
    win = rnd(8, lo=0.0, hi=1.0)
    case("STFT_window", F, "STFT", [("x", s), ("c", I64(4)), ("x", win)], {},
         lambda a, st, w: stft(a.astype(np.float64), 4, 8, w))
    case("STFT_frame_length", F, "STFT", [("x", s), ("c", I64(5)), None, ("c", I64(6))], {},
         lambda a, st, n: stft(a.astype(np.float64), 5, 6))


def _cosine_window(size, periodic, a0, a1, a2=0.0):
    n = size if periodic else size - 1
    t = 2 * np.pi * np.arange(size) / n
    return a0 - a1 * np.cos(t) + a2 * np.cos(2 * t)


def _mel(bins, dft, rate, lo, hi):
    """ONNX's MelWeightMatrix definition: triangles between mel-spaced points floored to bins."""
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)  # noqa: E731
    step = (mel(hi) - mel(lo)) / (bins + 2)
    pts = [int(np.floor((dft + 1) * 700 * (10 ** ((i * step + mel(lo)) / 2595) - 1) / rate))
           for i in range(bins + 2)]
    out = np.zeros((dft // 2 + 1, bins))
    for i in range(bins):
        l, c, h = pts[i:i + 3]
        if c == l:
            out[c, i] = 1
        else:
            for j in range(l, c + 1):
                out[j, i] = (j - l) / (c - l)
        for j in range(c, h):
            out[j, i] = (h - j) / (h - c)
    return out


def _nms(boxes, scores, max_out, iou_max, score_min):
    sel = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            order = [i for i in np.argsort(-scores[b, c], kind="stable")
                     if scores[b, c, i] > score_min]
            kept = []
            for i in order:
                if len(kept) == max_out:
                    break
                y1, x1, y2, x2 = boxes[b, i]
                ok = True
                for k in kept:
                    p1, q1, p2, q2 = boxes[b, k]
                    inter = max(0, min(y2, p2) - max(y1, p1)) * max(0, min(x2, q2) - max(x1, q1))
                    union = (y2 - y1) * (x2 - x1) + (p2 - p1) * (q2 - q1) - inter
                    ok = ok and not (union > 0 and inter / union > iou_max)
                if ok:
                    kept.append(i)
                    sel.append([b, c, i])
    return np.array(sel, np.float32).reshape(-1, 3)


def folded(outdir, rnd):
    """Ops whose inputs are all constants, evaluated at import: each case's graph adds every
    folded output (Cast to float) to a zero graph input of its shape, so that something runs."""
    meta = []
    F = TensorProto.FLOAT

    def model(name, op, inputs, attrs, expects, nouts=1):
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        names, inits = [], []
        for k, arr in enumerate(inputs):
            if arr is None:
                names.append("")
                continue
            inits.append(numpy_helper.from_array(arr, f"c{k}"))
            names.append(f"c{k}")
        ks = [f"k{j}" for j in range(nouts)]
        nodes = [helper.make_node(op, names, ks, name=name, **attrs)]
        ginputs, gouts = [], []
        for j, e in enumerate(expects):
            nodes.append(helper.make_node("Cast", [ks[j]], [f"f{j}"], to=F))
            nodes.append(helper.make_node("Add", [f"f{j}", f"z{j}"], [f"y{j}"]))
            ginputs.append(helper.make_tensor_value_info(f"z{j}", F, list(e.shape)))
            gouts.append(helper.make_tensor_value_info(f"y{j}", F, None))
            np.save(os.path.join(d, f"in_z{j}.npy"), np.zeros(e.shape, np.float32))
            np.save(os.path.join(d, f"exp_y{j}.npy"), np.asarray(e).astype(np.float32))
        m = helper.make_model(helper.make_graph(nodes, name, ginputs, gouts, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, os.path.join(d, "model.onnx"))
        meta.append(dict(name=name, family="dataops", op=op,
                         inputs=[f"z{j}" for j in range(len(expects))], oracle=True))

    for periodic in (1, 0):
        sfx = "periodic" if periodic else "symmetric"
        model(f"HannWindow_{sfx}", "HannWindow", [I64(10)], {"periodic": periodic},
              [_cosine_window(10, periodic, 0.5, 0.5)])
        model(f"HammingWindow_{sfx}", "HammingWindow", [I64(9)], {"periodic": periodic},
              [_cosine_window(9, periodic, 25 / 46, 21 / 46)])
        model(f"BlackmanWindow_{sfx}", "BlackmanWindow", [I64(12)], {"periodic": periodic},
              [_cosine_window(12, periodic, 0.42, 0.5, 0.08)])
    model("MelWeightMatrix", "MelWeightMatrix",
          [I64(6), I64(32), I64(16000), np.array(100, np.float32), np.array(6000, np.float32)],
          {}, [_mel(6, 32, 16000, 100.0, 6000.0)])
    nz = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    model("NonZero", "NonZero", [nz], {}, [np.array(np.nonzero(nz))])
    ux = np.array([[2, 1], [0, 3], [2, 1], [0, 3], [1, 1]], np.float32)
    y, idx, inv, cnt = np.unique(ux, axis=0, return_index=True, return_inverse=True,
                                 return_counts=True)
    model("Unique_axis0_sorted", "Unique", [ux], {"axis": 0}, [y, idx, inv.reshape(-1), cnt],
          nouts=4)
    uf = np.array([3, 1, 3, 2, 1, 5], np.float32)
    model("Unique_flat_unsorted", "Unique", [uf], {"sorted": 0},
          [np.array([3, 1, 2, 5]), np.array([0, 1, 3, 5]), np.array([0, 1, 0, 2, 1, 3]),
           np.array([2, 2, 1, 1])], nouts=4)
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.8, 0.2, 0.3, 0.4, 0.9]]],
                      np.float32)
    model("NonMaxSuppression", "NonMaxSuppression",
          [boxes, scores, I64(2), np.array([0.5], np.float32), np.array([0.25], np.float32)], {},
          [_nms(boxes, scores, 2, 0.5, 0.25)])
    return meta
