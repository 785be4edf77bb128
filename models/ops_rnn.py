"""ops_rnn.py - single-operator cases for the recurrent operators RNN, GRU and LSTM (family "rnn"),
imported by make_ops.py. The oracle is a numpy transcription of ONNX's equations (operator
docs, opset 14), written here step by step in float64 and independent of npuc; the torch cases
export torch.nn.RNN/GRU/LSTM at opset 14 and take torch's own output as the oracle.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

F = TensorProto.FLOAT


# ----------------------------------------------------------------------------- activations
def _act(name, alpha=None, beta=None):
    """ONNX's RNN activation `name` as a numpy function (float64)."""
    a, b = alpha, beta
    fns = {
        "Relu": lambda x: np.maximum(x, 0),
        "Tanh": np.tanh,
        "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "Affine": lambda x: a * x + b,
        "LeakyRelu": lambda x: np.where(x >= 0, x, a * x),
        "ThresholdedRelu": lambda x: np.where(x >= a, x, 0),
        "ScaledTanh": lambda x: a * np.tanh(b * x),
        "HardSigmoid": lambda x: np.clip(a * x + b, 0, 1),
        "Elu": lambda x: np.where(x >= 0, x, a * (np.exp(x) - 1)),
        "Softsign": lambda x: x / (1 + np.abs(x)),
        "Softplus": lambda x: np.log(1 + np.exp(x)),
    }
    return fns[name]


def _acts(names, alphas, betas):
    """One numpy function per name; alphas/betas are per-function lists (None where unused)."""
    return [_act(n, a, b) for n, a, b in zip(names, alphas, betas)]


# ----------------------------------------------------------------------------- oracle
def recurrent(op, X, W, R, B=None, seq=None, h0=None, c0=None, P=None, direction="forward",
              acts=None, clip=None, layout=0, linear_before_reset=0, input_forget=0):
    """Y, Y_h(, Y_c) of RNN/GRU/LSTM per the ONNX operator definitions. acts: the numpy
    functions per direction (f; f, g; f, g, h), direction-major."""
    X = X.astype(np.float64)
    if layout:
        X = X.transpose(1, 0, 2)
    S, Bn, _ = X.shape
    D = 2 if direction == "bidirectional" else 1
    H = R.shape[-1]
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    nf = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    B = np.zeros((D, 2 * G * H)) if B is None else B.astype(np.float64)
    P = np.zeros((D, 3 * H)) if P is None else P.astype(np.float64)
    state = lambda v: (np.zeros((D, Bn, H)) if v is None else
                       v.astype(np.float64).transpose(1, 0, 2) if layout else v.astype(np.float64))
    h0, c0 = state(h0), state(c0)
    seq = np.full(Bn, S) if seq is None else np.asarray(seq).astype(np.int64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((S, D, Bn, H))
    Yh, Yc = np.zeros((D, Bn, H)), np.zeros((D, Bn, H))
    for d in range(D):
        f, g, h = (acts[d * nf:(d + 1) * nf] + [None, None])[:3]
        rev = direction == "reverse" or d == 1
        w, r = W[d].astype(np.float64), R[d].astype(np.float64)
        wb, rb = B[d, :G * H], B[d, G * H:]
        for b in range(Bn):
            Ht, Ct = h0[d, b].copy(), c0[d, b].copy()
            L = int(seq[b])
            for t in (range(L - 1, -1, -1) if rev else range(L)):
                x = X[t, b]
                gx = w @ x + wb
                if op == "RNN":
                    Ht = f(cl(gx + r @ Ht + rb))
                elif op == "GRU":
                    z = f(cl(gx[:H] + r[:H] @ Ht + rb[:H]))
                    rr = f(cl(gx[H:2 * H] + r[H:2 * H] @ Ht + rb[H:2 * H]))
                    if linear_before_reset:
                        hh = g(cl(gx[2 * H:] + rr * (r[2 * H:] @ Ht + rb[2 * H:])))
                    else:
                        hh = g(cl(gx[2 * H:] + r[2 * H:] @ (rr * Ht) + rb[2 * H:]))
                    Ht = (1 - z) * hh + z * Ht
                else:
                    gg = gx + r @ Ht + rb
                    pi, po, pf = P[d, :H], P[d, H:2 * H], P[d, 2 * H:]
                    i = f(cl(gg[:H] + pi * Ct))
                    fo = 1 - i if input_forget else f(cl(gg[2 * H:3 * H] + pf * Ct))
                    c = g(cl(gg[3 * H:]))
                    Ct = fo * Ct + i * c
                    o = f(cl(gg[H:2 * H] + po * Ct))
                    Ht = o * h(Ct)
                Y[t, d, b] = Ht
            Yh[d, b], Yc[d, b] = Ht, Ct
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return [Y, Yh, Yc] if op == "LSTM" else [Y, Yh]


# ----------------------------------------------------------------------------- oracle check
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


def check_oracle():
    """recurrent() against ONNX's own node tests of RNN/GRU/LSTM (default activations), where
    Debian's libonnx-testdata is installed: the oracle must reproduce their outputs."""
    if not os.path.isdir(NODE_TESTS):
        return
    from onnx import numpy_helper
    sig = _act("Sigmoid")
    defaults = {"RNN": [np.tanh], "GRU": [sig, np.tanh], "LSTM": [sig, np.tanh, np.tanh]}
    for d in sorted(os.listdir(NODE_TESTS)):
        if not any(k in d for k in ("rnn", "gru", "lstm")):
            continue
        base = os.path.join(NODE_TESTS, d)
        m = onnx.load(os.path.join(base, "model.onnx"))
        n = m.graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        load = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(base, f)))
        feeds = {vi.name: load(f"test_data_set_0/input_{i}.pb")
                 for i, vi in enumerate(m.graph.input)}
        args = [feeds[nm] if nm else None for nm in n.input] + [None] * (8 - len(n.input))
        lstm = n.op_type == "LSTM"
        got = recurrent(n.op_type, *args[:3], B=args[3], seq=args[4], h0=args[5],
                        c0=args[6] if lstm else None, P=args[7] if lstm else None,
                        acts=defaults[n.op_type], layout=attrs.get("layout", 0),
                        linear_before_reset=attrs.get("linear_before_reset", 0))
        k = 0
        for i, name in enumerate(n.output):
            if not name:
                continue
            want = load(f"test_data_set_0/output_{k}.pb")
            k += 1
            if not np.allclose(got[i].reshape(want.shape), want, rtol=1e-3, atol=1e-6):
                raise AssertionError(f"ops_rnn oracle disagrees with ONNX's {d} on {name}")


# ----------------------------------------------------------------------------- cases
def add(case, rnd):
    check_oracle()
    S, Bn, I, H = 4, 3, 5, 4
    x = rnd(S, Bn, I)
    sig, tanh = _act("Sigmoid"), np.tanh

    def weights(G, D, scale=0.6):
        return (rnd(D, G * H, I) * scale, rnd(D, G * H, H) * scale, rnd(D, 2 * G * H) * 0.5)

    # RNN: defaults (tanh, forward), weights as initializers, every output.
    W, R, B = weights(1, 1)
    case("RNN_defaults", "rnn", "RNN", [("x", x), ("c", W), ("c", R), ("c", B)],
         {"hidden_size": H}, lambda *v: recurrent("RNN", *v, acts=[tanh]), outs=2)
    # Reverse Relu RNN with constant sequence lengths (one empty: Y_h is initial_h) and W, R, B
    # as runtime inputs.
    h0 = rnd(1, Bn, H)
    seq = np.array([4, 2, 0], np.int32)
    case("RNN_reverse_relu_seq_lens", "rnn", "RNN",
         [("x", x), ("x", W), ("x", R), ("x", B), ("c", seq), ("x", h0)],
         {"hidden_size": H, "direction": "reverse", "activations": ["Relu"]},
         lambda x, W, R, B, s, h: recurrent("RNN", x, W, R, B, s, h, direction="reverse",
                                            acts=[_act("Relu")]), outs=2)
    # Bidirectional, batch-first, two activations with parameters, clip, no bias.
    W2, R2, _ = weights(1, 2)
    xb = rnd(Bn, S, I)
    # One function per direction (forward LeakyRelu, backward Affine); alpha/beta are listed
    # only for the functions that take them: LeakyRelu and Affine read alpha, Affine beta.
    rnn_acts = _acts(["LeakyRelu", "Affine"], [0.3, 0.7], [None, 0.1])
    case("RNN_bidirectional_layout1_clip", "rnn", "RNN", [("x", xb), ("c", W2), ("c", R2)],
         {"hidden_size": H, "direction": "bidirectional", "layout": 1, "clip": 0.8,
          "activations": ["LeakyRelu", "Affine"], "activation_alpha": [0.3, 0.7],
          "activation_beta": [0.1]},
         lambda x, W, R: recurrent("RNN", x, W, R, direction="bidirectional", layout=1,
                                   clip=0.8, acts=rnn_acts),
         outs=2)

    # GRU: defaults with a bias.
    W, R, B = weights(3, 1)
    case("GRU_defaults", "rnn", "GRU", [("x", x), ("c", W), ("c", R), ("c", B)],
         {"hidden_size": H}, lambda *v: recurrent("GRU", *v, acts=[sig, tanh]), outs=2)
    # Bidirectional linear_before_reset, initial_h, constant lengths, all outputs.
    W, R, B = weights(3, 2)
    h0 = rnd(2, Bn, H)
    seq = np.array([3, 4, 1], np.int64)
    case("GRU_bidirectional_linear_before_reset", "rnn", "GRU",
         [("x", x), ("c", W), ("c", R), ("c", B), ("c", seq), ("x", h0)],
         {"hidden_size": H, "direction": "bidirectional", "linear_before_reset": 1},
         lambda x, W, R, B, s, h: recurrent("GRU", x, W, R, B, s, h, direction="bidirectional",
                                            linear_before_reset=1, acts=[sig, tanh] * 2),
         outs=2)
    # Reverse GRU, HardSigmoid/ScaledTanh with explicit parameters and one default (HardSigmoid's
    # beta 0.5 is given explicitly too), clip.
    W, R, B = weights(3, 1)
    gru_acts = _acts(["HardSigmoid", "ScaledTanh"], [0.25, 1.2], [0.5, 0.9])
    case("GRU_reverse_hardsigmoid_scaledtanh", "rnn", "GRU",
         [("x", x), ("c", W), ("c", R), ("c", B)],
         {"hidden_size": H, "direction": "reverse", "clip": 1.5,
          "activations": ["HardSigmoid", "ScaledTanh"],
          "activation_alpha": [0.25, 1.2], "activation_beta": [0.5, 0.9]},
         lambda x, W, R, B: recurrent("GRU", x, W, R, B, direction="reverse", clip=1.5,
                                      acts=gru_acts), outs=2)

    # LSTM: defaults, three outputs.
    W, R, B = weights(4, 1)
    case("LSTM_defaults", "rnn", "LSTM", [("x", x), ("c", W), ("c", R), ("c", B)],
         {"hidden_size": H}, lambda *v: recurrent("LSTM", *v, acts=[sig, tanh, tanh]), outs=3)
    # Bidirectional with peepholes, initial states, lengths and clip.
    W, R, B = weights(4, 2)
    h0, c0, P = rnd(2, Bn, H), rnd(2, Bn, H), rnd(2, 3 * H) * 0.5
    seq = np.array([2, 4, 3], np.int32)
    case("LSTM_bidirectional_peepholes", "rnn", "LSTM",
         [("x", x), ("c", W), ("c", R), ("c", B), ("c", seq), ("x", h0), ("x", c0), ("c", P)],
         {"hidden_size": H, "direction": "bidirectional", "clip": 2.0},
         lambda x, W, R, B, s, h, c, P: recurrent(
             "LSTM", x, W, R, B, s, h, c, P, direction="bidirectional", clip=2.0,
             acts=[sig, tanh, tanh] * 2), outs=3)
    # Batch-first, input_forget, the remaining activations (Softsign, Elu, Softplus,
    # ThresholdedRelu) with default parameters.
    W, R, B = weights(4, 1)
    lstm_acts = _acts(["Softsign", "Elu", "Softplus"], [None, 1.0, None], [None] * 3)
    case("LSTM_layout1_input_forget", "rnn", "LSTM",
         [("x", xb), ("c", W), ("c", R), ("c", B), None, ("x", rnd(Bn, 1, H))],
         {"hidden_size": H, "layout": 1, "input_forget": 1,
          "activations": ["Softsign", "Elu", "Softplus"]},
         lambda x, W, R, B, h: recurrent("LSTM", x, W, R, B, None, h, layout=1, input_forget=1,
                                         acts=lstm_acts),
         outs=3)
    tr_acts = _acts(["ThresholdedRelu", "Tanh", "Sigmoid"], [-0.2, None, None], [None] * 3)
    case("LSTM_reverse_thresholded_relu", "rnn", "LSTM", [("x", x), ("c", W), ("c", R)],
         {"hidden_size": H, "direction": "reverse",
          "activations": ["ThresholdedRelu", "Tanh", "Sigmoid"],
          "activation_alpha": [-0.2]},
         lambda x, W, R: recurrent("LSTM", x, W, R, direction="reverse",
                                   acts=tr_acts), outs=3)


def torch_cases(outdir, rnd):
    """torch.nn.RNN/GRU/LSTM (1-2 layers, bidirectional, batch_first) exported with
    torch.onnx.export at opset 14; torch's output is the oracle."""
    import torch
    torch.manual_seed(0)
    mods = {
        "torch_LSTM_2layer_bidirectional_batch_first":
            torch.nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True),
        "torch_GRU_1layer": torch.nn.GRU(5, 4),
        "torch_GRU_2layer_bidirectional": torch.nn.GRU(5, 3, num_layers=2, bidirectional=True),
        "torch_RNN_2layer_relu_batch_first":
            torch.nn.RNN(5, 4, num_layers=2, nonlinearity="relu", batch_first=True),
        "torch_RNN_bidirectional": torch.nn.RNN(5, 4, bidirectional=True),
        "torch_LSTM_1layer": torch.nn.LSTM(5, 3),
    }
    out = []
    for name, m in mods.items():
        m.eval()
        x = torch.from_numpy(rnd(3, 4, 5))
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        torch.onnx.export(m, (x,), path, opset_version=14, input_names=["i0"],
                          output_names=["y0"])
        # Keep only Y: the exporter's state outputs are checked through Y's last step.
        model = onnx.load(path)
        del model.graph.output[1:]
        onnx.save(model, path)
        np.save(os.path.join(d, "in_i0.npy"), x.numpy())
        with torch.no_grad():
            np.save(os.path.join(d, "exp_y0.npy"), m(x)[0].numpy())
        op = type(m).__name__
        out.append(dict(name=name, family="rnn", op=op, inputs=["i0"], oracle=True))
    return out
