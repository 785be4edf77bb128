#!/usr/bin/python3
"""The Python module (python/npuc): descriptions as editable dicts, compiling from a path, bytes
or an onnx.ModelProto, running against the reference executor, the report's energy and area,
errors as npuc.Error with npuc's messages, and explore with a per-point callback whose records
and Pareto front agree with the C++ side's files."""
import argparse
import csv
import os
import shutil
import sys

import numpy as np
import onnx


def close(a, b, what):
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    scale = float(np.max(np.abs(b))) + 1e-6
    assert err <= 2e-2 * scale + 1e-3, (what, err, scale)


def expect_error(fn, needle):
    import npuc
    try:
        fn()
    except npuc.Error as e:
        assert needle in str(e), (needle, str(e))
        return
    raise AssertionError(f"no npuc.Error containing {needle!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pythonpath", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.pythonpath)
    import npuc

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    base_path = os.path.join(a.root, "configs", "npu-base.yaml")
    model_path = os.path.join(a.root, "models", "tinycnn.onnx")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)

    # A description as a dict, in file order, edited and compiled.
    hw = npuc.load_target(base_path)
    assert list(hw)[:2] == ["name", "description"], list(hw)[:4]
    assert hw["tensor_unit"]["rows"] == 16 and hw["memory"][1]["size"] == "1 MiB", hw["memory"][1]
    base = npuc.compile(model_path, base_path)
    hw["tensor_unit"]["rows"] = hw["tensor_unit"]["cols"] = 32
    big = npuc.compile(model_path, hw)
    assert big.target["tensor_unit"]["rows"] == 32
    assert any(g["placement"] == "cpu" and "Softmax" in g["cpu_reason"] for g in big.groups)

    ref = npuc.reference(model_path, {"input": x})
    for m in (base, big):
        outs, report = m.run({"input": x})
        assert set(outs) == set(ref), (outs.keys(), ref.keys())
        for k in ref:
            close(outs[k], ref[k], k)
        assert report["total_cycles"] > 0 and report["energy_pj"]["total"] > 0, report.keys()
    _, rb = base.run({"input": x})
    _, rg = big.run({"input": x})
    assert rg["peak_macs_per_cycle"] == 1024 and rb["peak_macs_per_cycle"] == 256
    assert rg["area_mm2"]["tensor_unit"] == 4 * rb["area_mm2"]["tensor_unit"], (rg, rb)

    # The model as an onnx.ModelProto and as bytes: the same compile.
    proto = onnx.load(model_path)
    for src in (proto, proto.SerializeToString()):
        _, r = npuc.compile(src, base_path).run({"input": x})
        assert r["total_cycles"] == rb["total_cycles"], (r["total_cycles"], rb["total_cycles"])
    # The host CPU target.
    outs, _ = npuc.compile(model_path, "cpu").run({"input": x})
    for k in ref:
        close(outs[k], ref[k], k)

    # Bad input: npuc's messages.
    hw["tensor_unit"]["rows"] = 0
    expect_error(lambda: npuc.compile(model_path, hw), "tensor_unit.rows")
    expect_error(lambda: base.run({"input": x[:, :, :16]}), "input")
    expect_error(lambda: npuc.compile(os.path.join(a.work, "none.onnx"), base_path), "none.onnx")

    # explore: the callback sees every record; the front agrees with pareto.csv.
    spec = os.path.join(a.work, "sweep.yaml")
    with open(spec, "w") as f:
        f.write(f"""base: {base_path}
models: [{model_path}]
axes:
  - {{name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [16, 16], [32, 32]]}}
  - {{param: memory.l1.size, values: [256 KiB, 1 MiB]}}
  - {{param: dram.bytes_per_cycle, values: [8, 32]}}
objectives: [cycles, area_mm2]
allow_cpu_groups: true
""")
    seen = []
    summary = npuc.explore(spec, os.path.join(a.work, "out"), jobs=2, plots=False,
                           on_point=seen.append)
    assert summary["evaluated"] == 12 and len(seen) == 12, (summary, len(seen))
    header, records = npuc.read_results(summary["results"])
    assert header["objectives"] == ["cycles", "area_mm2"]
    assert sorted(r["index"] for r in records) == sorted(r["index"] for r in seen)
    front = npuc.pareto(records, ["cycles", "area_mm2"])
    rows = list(csv.DictReader(open(os.path.join(a.work, "out", "pareto.csv"))))
    assert sorted(int(r["index"]) for r in rows) == sorted(r["index"] for r in front), (rows, front)

    def boom(record):
        raise ValueError("stop here")
    try:
        npuc.explore(spec, os.path.join(a.work, "out2"), plots=False, on_point=boom)
        raise AssertionError("the callback's exception was lost")
    except ValueError as e:
        assert "stop here" in str(e)
    print("python module checks passed")


if __name__ == "__main__":
    main()
