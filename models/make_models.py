#!/usr/bin/python3
"""make_models.py - generates npuc's bundled test models (the source of truth for models/).

Writes small ONNX models (opset 13, fixed seeds, random weights) plus a float32 input .npy and
the output torch computes for it (<name>_expected.npy, an oracle independent of npuc) into the
output directory given as the first argument. `--resnet18` also exports torchvision's ResNet-18
(weights=None, 1x3x224x224). Run with /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx).
"""
import argparse
import os

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


def randomize_bn(model, gen):
    # Fresh BatchNorm layers are identities (mean 0, var 1); give them real statistics so that
    # BN folding is exercised numerically.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def export(model, name, shape, outdir, seed):
    gen = torch.Generator().manual_seed(seed)
    randomize_bn(model, gen)
    model.eval()
    x = torch.randn(*shape, generator=gen)
    path = os.path.join(outdir, name + ".onnx")
    with torch.no_grad():
        y = model(x)
        # PRESERVE keeps BatchNormalization nodes (in inference mode) instead of letting the
        # exporter fold them into the convs: npuc's own BN folding is what we want to exercise.
        torch.onnx.export(model, x, path, opset_version=13, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["input"], output_names=["output"])
    onnx.checker.check_model(onnx.load(path))
    np.save(os.path.join(outdir, name + "_input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(outdir, name + "_expected.npy"), y.numpy().astype(np.float32))
    print(f"{path}: {os.path.getsize(path)} bytes, output {tuple(y.shape)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir")
    ap.add_argument("--resnet18", action="store_true", help="also export ResNet-18 (45 MB)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.manual_seed(0)
    export(TinyCnn(), "tinycnn", (1, 3, 32, 32), args.outdir, 1)
    torch.manual_seed(1)
    export(Mlp(), "mlp", (1, 64), args.outdir, 2)
    torch.manual_seed(2)
    export(DwNet(), "dwnet", (1, 3, 16, 16), args.outdir, 3)
    torch.manual_seed(3)
    export(Branchy(), "branchy", (1, 3, 20, 20), args.outdir, 4)
    if args.resnet18:
        import torchvision
        torch.manual_seed(4)
        export(torchvision.models.resnet18(weights=None), "resnet18", (1, 3, 224, 224),
               args.outdir, 5)


if __name__ == "__main__":
    main()
