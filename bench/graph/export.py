#!/usr/bin/python3
"""export.py - the graph-scheduling benchmark's models (bench/graph/run.sh): torchvision
ResNet-50 at batch 1 and 8, MobileNetV2 at batch 1, a U-Net with large activations and
concatenated skip connections (3x256x256), and the BERT-style encoder of models/make_models.py
at sequence 512. Random weights, fixed seeds, BatchNorm statistics randomised, as the test zoo.

usage: export.py OUTDIR
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import make_models as mm  # noqa: E402


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """Four levels (32..256 channels), max-pool down, nearest 2x upsampling, skip tensors
    concatenated at each level: activations of 256x256 images dominate the traffic."""

    def __init__(self, widths=(32, 64, 128, 256), classes=2):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(block(cin, w))
            cin = w
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.dec.append(block(cin + w, w))
            cin = w
        self.head = nn.Conv2d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x)
            if i + 1 < len(self.down):
                skips.append(x)
                x = self.pool(x)
        for d in self.dec:
            x = d(torch.cat([self.up(x), skips.pop()], 1))
        return self.head(x)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, batch in [("resnet50", 1), ("resnet50", 8), ("mobilenet_v2", 1)]:
        torch.manual_seed(mm.MODELS[name][1])
        model = mm.torchvision_model(name)
        mm.export(model, f"{name}_b{batch}", (batch, 3, 224, 224), out, mm.MODELS[name][1])
    torch.manual_seed(21)
    mm.export(UNet(), "unet_b1", (1, 3, 256, 256), out, 21)
    torch.manual_seed(22)
    mm.export(mm.BertEncoder(seq=512), "bert512_b1", (1, 512, 256), out, 22, 17)


if __name__ == "__main__":
    main()
