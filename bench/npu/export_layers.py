#!/usr/bin/python3
"""Exports the NPU benchmark's models (bench/npu/run.sh) into OUT_DIR:

  * every Conv2d and Linear layer of torchvision's ResNet-50 and MobileNetV2 (batch 1, 224x224,
    random weights: nothing is downloaded) as a standalone single-op ONNX model. Layers with an
    identical configuration (input shape, output channels, kernel, stride, padding, dilation,
    groups, bias) are exported once; the manifest counts how many times each occurs so that means
    can be weighted by the network's real MACs.
  * the whole networks (resnet50.onnx, mobilenetv2.onnx);
  * AlexNet's first conv as SCALE-Sim runs it: 1x3x224x224 input, 96 filters 11x11, stride 4,
    no padding (alexnet_conv1.onnx; torchvision's AlexNet has 64 filters and padding 2).

manifest.tsv has one row per exported model: file, network, layer (first occurrence), kind
(conv / dwconv / linear / network), multiplicity, MACs of one occurrence.
Usage: export_layers.py OUT_DIR
"""
import os
import sys

import torch
import torchvision

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def export(module, shape, path):
    if os.path.exists(path):
        return
    module.eval()
    torch.onnx.export(module, torch.randn(*shape), path, opset_version=13,
                      input_names=["input"], output_names=["output"])


def conv_macs(c, in_shape, out_shape):
    kh, kw = c.kernel_size
    return out_shape[1] * out_shape[2] * out_shape[3] * (c.in_channels // c.groups) * kh * kw


rows = []


def layers(net_name, model):
    """Records every Conv2d / Linear call with its input shape (forward hooks), deduplicated."""
    seen = {}
    order = []

    def hook(mod, inp, outp, name):
        x = inp[0]
        if isinstance(mod, torch.nn.Conv2d):
            key = ("conv", tuple(x.shape), mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.dilation, mod.groups, mod.bias is not None)
            macs = conv_macs(mod, x.shape, outp.shape)
            kind = "dwconv" if mod.groups > 1 and mod.groups == mod.in_channels else "conv"
        else:
            key = ("linear", tuple(x.shape), mod.out_features, mod.bias is not None)
            macs = x.shape[0] * mod.in_features * mod.out_features
            kind = "linear"
        if key in seen:
            seen[key][3] += 1
        else:
            seen[key] = [name, mod, tuple(x.shape), 1, macs, kind]
            order.append(key)

    handles = [m.register_forward_hook(lambda mod, i, o, n=n: hook(mod, i, o, n))
               for n, m in model.named_modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.randn(1, 3, 224, 224))
    for h in handles:
        h.remove()
    for i, key in enumerate(order):
        name, mod, shape, mult, macs, kind = seen[key]
        fname = f"{net_name}_{i:02d}_{name.replace('.', '_')}.onnx"
        export(mod, shape, os.path.join(out, fname))
        rows.append((fname, net_name, name, kind, mult, macs))


for net_name, ctor in (("resnet50", torchvision.models.resnet50),
                       ("mobilenetv2", torchvision.models.mobilenet_v2)):
    model = ctor(weights=None).eval()
    layers(net_name, model)
    fname = f"{net_name}.onnx"
    export(model, (1, 3, 224, 224), os.path.join(out, fname))
    rows.append((fname, net_name, "network", "network", 1, 0))

conv = torch.nn.Conv2d(3, 96, 11, stride=4, padding=0)
export(conv, (1, 3, 224, 224), os.path.join(out, "alexnet_conv1.onnx"))
rows.append(("alexnet_conv1.onnx", "alexnet", "features.0", "conv", 1, 96 * 54 * 54 * 3 * 121))

with open(os.path.join(out, "manifest.tsv"), "w") as f:
    for r in rows:
        f.write("\t".join(str(v) for v in r) + "\n")
print(f"{len(rows)} models in {out}")
