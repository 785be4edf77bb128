"""npuc from Python: compile ONNX models for an NPU description, run them on the simulator,
edit hardware descriptions as dicts, and explore design spaces (docs/PYTHON.md).

The work is done by the same C++ libraries as the `npuc` command (the `_npuc` extension built
with pybind11); this file only converts between Python objects and the extension's encodings.

    import npuc, numpy as np
    hw = npuc.load_target("configs/npu-base.yaml")      # an editable dict
    hw["tensor_unit"]["rows"] = hw["tensor_unit"]["cols"] = 32
    m = npuc.compile("model.onnx", hw)                  # a path, bytes or an onnx.ModelProto
    outputs, report = m.run({"input": np.zeros((1, 3, 32, 32), np.float32)})
    report["total_cycles"], report["energy_pj"]["total"], report["area_mm2"]["total"]
"""
import io
import json
import os
import tempfile

import numpy as np

from . import _npuc

Error = _npuc.Error

__all__ = ["Error", "Model", "load_target", "compile", "reference", "explore", "read_results",
           "pareto"]


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _array(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


def _inputs(inputs):
    if not isinstance(inputs, dict):
        raise TypeError("inputs: a dict of input name -> numpy array")
    return {name: _npy(np.asarray(a)) for name, a in inputs.items()}


def load_target(path):
    """A target description (YAML, configs/*.yaml) as a dict in file order. Edit it and pass it
    to compile(); it is validated as the file would be."""
    text = _npuc.read_file(os.fspath(path)).decode()
    return json.loads(_npuc.target_json(text, os.fspath(path)))


def _target(target):
    """(text, origin) of a target given as a path, 'cpu', or a dict (JSON is YAML)."""
    if isinstance(target, dict):
        return json.dumps(target), "<target dict {}>".format(target.get("name", "?"))
    if target == "cpu":
        return "cpu", "cpu"
    path = os.fspath(target)
    return _npuc.read_file(path).decode(), path


class _ModelFile:
    """A model as a path: a path as is; bytes or an onnx.ModelProto written to a temporary file
    for the duration (the C++ import reads files)."""

    def __init__(self, model):
        self.model, self.tmp = model, None

    def __enter__(self):
        if isinstance(self.model, (str, os.PathLike)):
            return os.fspath(self.model)
        data = self.model
        if hasattr(data, "SerializeToString"):
            data = data.SerializeToString()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("model: a path, bytes or an onnx.ModelProto")
        self.tmp = tempfile.TemporaryDirectory(prefix="npuc-")
        path = os.path.join(self.tmp.name, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __exit__(self, *exc):
        if self.tmp:
            self.tmp.cleanup()


class Model:
    """A compiled model (what `npuc compile` would package), ready to run on the simulator."""

    def __init__(self, handle):
        self._m = handle

    @property
    def target(self):
        """The description it was compiled for, as a dict."""
        return json.loads(_npuc.target_json(self._m.target_yaml, self._m.target_name))

    @property
    def groups(self):
        """Its fused groups: name, ops, placement ('npu'/'cpu') and, on the CPU, why."""
        return json.loads(self._m.groups_json())

    def run(self, inputs):
        """Runs on the simulator (NPU segments) and the CPU backend (CPU groups). Returns
        (outputs: dict of numpy arrays, report: dict, docs/REPORT.md)."""
        outs, report = _npuc.run(self._m, _inputs(inputs))
        return {k: _array(v) for k, v in outs.items()}, json.loads(report)


def compile(model, target, input_shapes=None):
    """Compiles `model` (a path, bytes or an onnx.ModelProto) for `target` (a description path,
    a dict from load_target, or 'cpu'). input_shapes pins dynamic input dims: {name: [dims]}."""
    text, origin = _target(target)
    with _ModelFile(model) as path:
        return Model(_npuc.compile(path, text, origin, dict(input_shapes or {})))


def reference(model, inputs, input_shapes=None):
    """The reference executor's outputs (`npuc ref`): the ground truth compiled runs are checked
    against."""
    with _ModelFile(model) as path:
        outs = _npuc.reference(path, _inputs(inputs), dict(input_shapes or {}))
    return {k: _array(v) for k, v in outs.items()}


def explore(spec, out_dir=None, jobs=1, plots=True, on_point=None):
    """Runs a sweep (docs/EXPLORE.md) as `npuc explore` does, resuming out_dir/results.jsonl
    (default: the spec's stem + '.explore' beside it). on_point(record: dict) is called as each
    point finishes. Returns a dict: planned, resumed, evaluated, rejected, report (the summary
    text), log (the progress lines), results (the results file's path)."""
    spec = os.fspath(spec)
    if out_dir is None:
        stem = os.path.splitext(os.path.basename(spec))[0]
        out_dir = os.path.join(os.path.dirname(spec), stem + ".explore")
    callback = None if on_point is None else (lambda text: on_point(json.loads(text)))
    return json.loads(_npuc.explore(spec, os.fspath(out_dir), int(jobs), bool(plots), callback))


def read_results(path):
    """A results.jsonl: (header dict, list of record dicts)."""
    r = json.loads(_npuc.read_results(os.fspath(path)))
    return r["header"], r["records"]


def pareto(records, objectives):
    """The ok records no other ok record beats in every objective (names as in
    docs/EXPLORE.md; mac_utilization is maximised, the rest minimised), ordered by the first
    objective: the same front `npuc explore` writes to pareto.csv."""
    records = list(records)
    indices = _npuc.pareto(json.dumps(records), list(objectives))
    return [records[i] for i in indices]
