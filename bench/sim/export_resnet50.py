#!/usr/bin/python3
"""Exports torchvision's ResNet-50 (random weights: nothing is downloaded) to ONNX, opset 13,
input 1x3x224x224 named "input", for the simulator benchmark (bench/sim/run.sh)."""
import sys

import torch
import torchvision

out = sys.argv[1] if len(sys.argv) > 1 else "resnet50.onnx"
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(model, torch.randn(1, 3, 224, 224), out, opset_version=13,
                  input_names=["input"], output_names=["output"])
print(out)
