#!/usr/bin/python3
"""make_models.py - generates npuc's bundled test models (the source of truth for models/).

Writes small ONNX models (opset 13, fixed seeds, random weights) plus a float32 input .npy and
the output torch computes for it (<name>_expected.npy, an oracle independent of npuc) into the
output directory given as the first argument. `--model NAME` (repeatable) exports only the named
whole models instead: the torchvision classifiers of the `models` ctest label (weights=None,
1x3x224x224, BatchNorm statistics randomised), a BERT-style torch.nn.TransformerEncoder, and a
GPT-2-style decoder's prefill and KV-cache decode step (Gpt2); see MODELS. Run with
/usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12, opsets up to 17).
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn_relu(cin, cout, k, stride=1, pad=None):
    pad = k // 2 if pad is None else pad
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, pad, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class TinyCnn(nn.Module):
    """conv-bn-relu blocks (one stride 2, one 1x1), a residual add + relu, maxpool, GAP, linear,
    softmax: the bundled default model."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn_relu(3, 16, 3)
        self.down = conv_bn_relu(16, 32, 3, stride=2)
        self.res_a = conv_bn_relu(32, 32, 3)
        self.res_b = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32))
        self.pw = conv_bn_relu(32, 48, 1)
        self.pool = nn.MaxPool2d(2, 2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(48, 10)

    def forward(self, x):
        x = self.stem(x)
        x = self.down(x)
        x = F.relu(self.res_b(self.res_a(x)) + x)
        x = self.pw(x)
        x = self.pool(x)
        x = torch.flatten(self.gap(x), 1)
        return F.softmax(self.fc(x), dim=1)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class DwNet(nn.Module):
    """Depthwise 3x3 + pointwise conv + ReLU6 (Clip) + average pool."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.pw = nn.Conv2d(16, 24, 1)
        self.pool = nn.AvgPool2d(2, 2)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        x = F.relu6(self.dw(x))
        x = F.relu6(self.pw(x))
        return self.pool(x)


class Branchy(nn.Module):
    """Two conv branches concatenated, a dilation-2 conv, padding, avgpool (ceil_mode=False)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, 1, 1)
        self.b = nn.Conv2d(3, 8, 5, 1, 2)
        self.dil = nn.Conv2d(16, 16, 3, 1, 2, dilation=2)
        self.pool = nn.AvgPool2d(3, 2, padding=1, ceil_mode=False, count_include_pad=False)

    def forward(self, x):
        y = torch.cat([torch.relu(self.a(x)), torch.sigmoid(self.b(x))], dim=1)
        y = torch.tanh(self.dil(y))
        return self.pool(y)


class ShuffleMini(nn.Module):
    """ShuffleNetV2 cut to CI size: torchvision's own channel-split and channel-shuffle blocks
    (Split or Slice, Reshape-Transpose-Reshape, Concat), one downsampling and two that split."""

    def __init__(self):
        super().__init__()
        from torchvision.models.shufflenetv2 import InvertedResidual
        self.stem = conv_bn_relu(3, 16, 3)
        self.blocks = nn.Sequential(InvertedResidual(16, 32, 2), InvertedResidual(32, 32, 1),
                                    InvertedResidual(32, 32, 1))
        self.head = conv_bn_relu(32, 64, 1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(x.mean([2, 3]))


def randomize_bn(model, gen):
    # Fresh BatchNorm layers are identities (mean 0, var 1); give them real statistics so that
    # BN folding is exercised numerically.
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def export(model, name, shape, outdir, seed, opset=13):
    gen = torch.Generator().manual_seed(seed)
    randomize_bn(model, gen)
    model.eval()
    x = torch.randn(*shape, generator=gen)
    path = os.path.join(outdir, name + ".onnx")
    with torch.no_grad():
        y = model(x)
    # Exported with autograd on: under no_grad, torch 1.13 routes MultiheadAttention and
    # TransformerEncoderLayer to fused "fast path" kernels that have no ONNX export.
    # PRESERVE keeps BatchNormalization nodes (in inference mode) instead of letting the
    # exporter fold them into the convs: npuc's own BN folding is what we want to exercise.
    torch.onnx.export(model, x, path, opset_version=opset, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["input"], output_names=["output"])
    onnx.checker.check_model(onnx.load(path))
    np.save(os.path.join(outdir, name + "_input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(outdir, name + "_expected.npy"), y.numpy().astype(np.float32))
    print(f"{path}: opset {opset}, {os.path.getsize(path)} bytes, output {tuple(y.shape)}")


class BertEncoder(nn.Module):
    """A BERT-base-shaped encoder cut to CI size: learned positions added to the token
    embeddings, 4 post-norm torch.nn.TransformerEncoder layers (GELU), a final LayerNorm and a
    pooled classifier head over the first token. Its input is the 1x64x256 float token
    embeddings (HF's `inputs_embeds`): npuc's graph inputs are float32 only, so the int64
    token-id lookup stays with the caller."""

    def __init__(self, seq=64, d=256, heads=4, ff=1024, layers=4, classes=10):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d),
                                         enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, emb):
        h = self.enc(emb + self.pos)
        return self.head(torch.tanh(h[:, 0]))


class Gpt2Block(nn.Module):
    """A GPT-2 block: pre-LayerNorm causal self-attention (one fused QKV projection, the causal
    mask applied with masked_fill as HF's GPT-2 does) and a tanh-GELU MLP, each residual. With a
    KV cache (past_k, past_v: [1, heads, past, d/heads]) the new tokens' keys and values are
    appended to it and the block returns the grown cache."""

    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x, past_k=None, past_v=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, self.dh).transpose(1, 2) for z in (q, k, v))
        if past_k is not None:
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        n = k.shape[2]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        scores = scores.masked_fill(~self.causal[n - t:n, :n], float("-inf"))
        y = (F.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x, k, v


class Gpt2(nn.Module):
    """A GPT-2-style decoder: learned positions, pre-norm blocks, a final LayerNorm and an LM head.
    Its input is the token embeddings (npuc's graph inputs are float32: the int64 token lookup
    stays with the caller, as for BertEncoder). forward(emb) is the prefill; with a KV cache
    (past_k0.., past_v0..) it is a decode step whose positions follow the cache's. Returns the
    logits, then every layer's keys, then every layer's values (the cache for the next step)."""

    def __init__(self, d=256, heads=4, layers=4, seq=128, vocab=1024):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.blocks = nn.ModuleList(Gpt2Block(d, heads, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, emb, *past):
        n = past[0].shape[2] if past else 0
        x = emb + self.pos[:, n:n + emb.shape[1]]
        ks, vs = [], []
        for i, blk in enumerate(self.blocks):
            cache = (past[i], past[len(self.blocks) + i]) if past else ()
            x, k, v = blk(x, *cache)
            ks.append(k)
            vs.append(v)
        return (self.head(self.ln(x)), *ks, *vs)


# The CI-size decoder (4 layers, d=256, 4 heads, sequence 128, vocabulary 1024), the shape of
# GPT-2 small (12 layers, d=768, 12 heads, sequence 1024, vocabulary 50257: bench/transformer)
# and one CI-size block at sequence 2048 (bench/transformer: attention whose scores, 8 MB per
# head, cannot stay on chip between groups).
GPT2_SHAPES = {"gpt2": dict(d=256, heads=4, layers=4, seq=128, vocab=1024),
               "gpt2_small": dict(d=768, heads=12, layers=12, seq=1024, vocab=50257),
               "gpt2_long": dict(d=256, heads=4, layers=1, seq=2048, vocab=1024)}
# Tokens of the prefill (the decode step's cache holds one fewer).
GPT2_TOKENS = {"gpt2": 128, "gpt2_small": 128, "gpt2_long": 2048}


def export_gpt2(name, outdir, seed, opset):
    """<shape>_prefill: the first `tokens` tokens at once; <shape>_decode: one more token with the
    KV cache of the first tokens - 1 (so its logits must equal the prefill's last row, checked
    here). Writes <name>_<input>.npy for every input and <name>_expected_<output>.npy for every
    output, from torch."""
    shape, mode = name.rsplit("_", 1)
    tokens = GPT2_TOKENS[shape]
    gen = torch.Generator().manual_seed(seed)
    model = Gpt2(**GPT2_SHAPES[shape]).eval()
    d, layers = model.ln.normalized_shape[0], len(model.blocks)
    emb = torch.randn(1, tokens, d, generator=gen)
    kv = [f"{c}{i}" for c in "kv" for i in range(layers)]
    with torch.no_grad():
        full = model(emb)
        past = [t[:, :, :tokens - 1].contiguous() for t in full[1:]]
        step = model(emb[:, tokens - 1:], *past)
    err = float((step[0][0, 0] - full[0][0, tokens - 1]).abs().max())
    assert err < 1e-4, f"the decode step's logits differ from the prefill's by {err}"
    args, outs = ((emb,), full) if mode == "prefill" else ((emb[:, tokens - 1:], *past), step)
    in_names = ["input"] + ([f"past_{n}" for n in kv] if mode == "decode" else [])
    out_names = ["logits"] + [f"present_{n}" for n in kv]
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, args, path, opset_version=opset, do_constant_folding=True,
                      input_names=in_names, output_names=out_names)
    onnx.checker.check_model(path)
    for n, t in zip(in_names, args):
        np.save(os.path.join(outdir, f"{name}_{n}.npy"), t.numpy().astype(np.float32))
    for n, t in zip(out_names, outs):
        np.save(os.path.join(outdir, f"{name}_expected_{n}.npy"), t.numpy().astype(np.float32))
    print(f"{path}: opset {opset}, {os.path.getsize(path)} bytes, inputs {in_names}")


def torchvision_model(name):
    import torchvision.models as tv
    if name == "googlenet":
        # "Inception-free" as the issue asks: no auxiliary heads, no input re-normalisation.
        return tv.googlenet(weights=None, aux_logits=False, init_weights=True,
                            transform_input=False)
    return getattr(tv, name)(weights=None)


# name -> (opset, seed). Most models use opset 13; a few use 17 so that both ends of the
# supported range are exercised on whole networks.
MODELS = {
    "resnet18": (13, 5), "resnet50": (13, 6), "mobilenet_v2": (13, 7),
    "mobilenet_v3_small": (17, 8), "squeezenet1_1": (13, 9), "vgg11": (13, 10),
    "densenet121": (13, 11), "googlenet": (17, 12), "regnet_x_400mf": (13, 13),
    "vit_b_16": (17, 14), "bert_encoder": (17, 15), "convnext_tiny": (13, 16),
    "gpt2_prefill": (17, 17), "gpt2_decode": (17, 17),
    "gpt2_small_prefill": (17, 18), "gpt2_small_decode": (17, 18),
    "gpt2_long_prefill": (17, 19),
}


def export_named(name, outdir, batch=1):
    opset, seed = MODELS[name]
    torch.manual_seed(seed)
    if name == "bert_encoder":
        export(BertEncoder(), name, (batch, 64, 256), outdir, seed, opset)
        return
    if name.startswith("gpt2"):
        if batch != 1:
            sys.exit(f"{name}: exported at batch 1 only (the KV cache is per sequence)")
        export_gpt2(name, outdir, seed, opset)
        return
    model = torchvision_model(name)
    if name == "vit_b_16":
        # torchvision zero-initialises ViT's classifier head, which would make every output 0.
        nn.init.normal_(model.heads.head.weight, std=0.02)
    export(model, name, (batch, 3, 224, 224), outdir, seed, opset)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir")
    ap.add_argument("--model", action="append", choices=sorted(MODELS), default=[],
                    help="export only this whole model (repeatable)")
    ap.add_argument("--resnet18", action="store_true", help="same as --model resnet18")
    ap.add_argument("--batch", type=int, default=1,
                    help="batch size of the --model exports (the input's fixed leading dim)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    names = args.model + (["resnet18"] if args.resnet18 else [])
    if names:
        for name in names:
            export_named(name, args.outdir, args.batch)
        return
    torch.manual_seed(0)
    export(TinyCnn(), "tinycnn", (1, 3, 32, 32), args.outdir, 1)
    torch.manual_seed(1)
    export(Mlp(), "mlp", (1, 64), args.outdir, 2)
    torch.manual_seed(2)
    export(DwNet(), "dwnet", (1, 3, 16, 16), args.outdir, 3)
    torch.manual_seed(3)
    export(Branchy(), "branchy", (1, 3, 20, 20), args.outdir, 4)
    torch.manual_seed(4)
    export(ShuffleMini(), "shufflemini", (1, 3, 16, 16), args.outdir, 5)


if __name__ == "__main__":
    main()
