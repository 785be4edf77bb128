#!/usr/bin/python3
"""CLI checks of `npuc explore` (docs/EXPLORE.md): a small sweep of the bundled tinycnn on two
jobs writes results.jsonl, the tables and the plots; --dry-run lists points and constraint
verdicts; a rerun resumes with nothing to do; `npuc explore report` redraws under other
objectives; bad specs and arguments fail with the field named and leave no output."""
import csv
import json
import os
import shutil
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_check import parse_args, run  # noqa: E402


def main():
    a = parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    w = lambda f: os.path.join(a.work, f)
    base = os.path.join(a.root, "configs", "npu-base.yaml")
    model = os.path.join(a.root, "models", "tinycnn.onnx")
    spec = f"""base: {base}
models: [{model}]
axes:
  - {{name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [16, 16]]}}
  - {{param: memory.l1.size, values: [256 KiB, 1 MiB]}}
  - {{name: exp, optional_ops: [exp]}}
constraints: [memory.l1.size >= 1 MiB or not exp]
objectives: [cycles, area_mm2, energy_uj]
allow_cpu_groups: true
"""
    with open(w("sweep.yaml"), "w") as f:
        f.write(spec)

    # --dry-run: 8 points, the constraint's verdicts, nothing written.
    p = run([a.npuc, "explore", w("sweep.yaml"), "--dry-run"])
    assert "grid of 8 point(s), visiting 8" in p.stdout, p.stdout
    assert p.stdout.count("rejected: memory.l1.size >= 1 MiB or not exp") == 2, p.stdout
    assert not os.path.exists(w("sweep.explore")), "dry run wrote nothing"

    # The sweep (default output directory beside the spec).
    p = run([a.npuc, "explore", w("sweep.yaml"), "--jobs", "2"])
    out = w("sweep.explore")
    assert "8 point(s) visited: 0 already in" in p.stdout, p.stdout
    assert "6 evaluated, 2 rejected" in p.stdout, p.stdout
    assert "Pareto front under cycles, area_mm2, energy_uj" in p.stdout, p.stdout
    assert "[8] point" in p.stderr, p.stderr
    lines = open(os.path.join(out, "results.jsonl")).read().splitlines()
    assert len(lines) == 9, lines
    header = json.loads(lines[0])
    assert header["axes"] == ["array", "memory.l1.size", "exp"], header
    recs = [json.loads(l) for l in lines[1:]]
    assert sorted(r["index"] for r in recs) == list(range(8))
    # tinycnn's Softmax runs on the CPU on npu-base (its reason recorded); allow_cpu_groups
    # ranks such points. The exp op costs area: one special-function unit per lane.
    area = {}
    for r in recs:
        if r["status"] == "rejected":
            assert r["point"]["exp"] and r["point"]["memory.l1.size"] == "256 KiB", r
            continue
        assert r["status"] == "ok", r
        assert "Softmax" in json.dumps(r["models"]["tinycnn"]["cpu_group_reasons"]), r
        area[(json.dumps(r["point"]["array"]), r["point"]["memory.l1.size"],
              r["point"]["exp"])] = r["metrics"]["area_mm2"]
    assert area[("[8, 8]", "1 MiB", True)] > area[("[8, 8]", "1 MiB", False)], area
    rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
    assert [int(r["index"]) for r in rows] == list(range(8)), rows
    front = list(csv.DictReader(open(os.path.join(out, "pareto.csv"))))
    ok = [r for r in recs if r["status"] == "ok"]
    assert len(ok) == 6 and 1 <= len(front) <= 6, (front, ok)
    for f in ("pareto.png", "pareto.svg", "sensitivity-array.png", "sensitivity-array.svg"):
        assert os.path.getsize(os.path.join(out, f)) > 1000, f
    assert open(os.path.join(out, "pareto.png"), "rb").read(4) == b"\x89PNG"

    # A rerun resumes: nothing to evaluate, same front.
    p = run([a.npuc, "explore", w("sweep.yaml"), "--no-plots"])
    assert "8 point(s) visited: 8 already in" in p.stdout and "0 evaluated" in p.stdout, p.stdout
    assert len(open(os.path.join(out, "results.jsonl")).read().splitlines()) == 9

    # Tuning every point is another sweep: its records are never mixed with these.
    p = run([a.npuc, "explore", w("sweep.yaml"), "--tune-trials", "3"], ok=False)
    assert "holds the results of another sweep" in p.stderr, p.stderr

    # report: other objectives, another directory, no simulation.
    os.makedirs(w("re"))
    p = run([a.npuc, "explore", "report", os.path.join(out, "results.jsonl"), "--objectives",
             "energy_uj,cycles", "-o", w("re")])
    assert "Pareto front under energy_uj, cycles" in p.stdout, p.stdout
    assert os.path.getsize(w("re/pareto.svg")) > 1000

    # A point's layers against its roofline (that point compiled and simulated again).
    p = run([a.npuc, "explore", "report", os.path.join(out, "results.jsonl"), "--no-plots",
             "--roofline", "7", "-o", w("re")])
    assert "roofline-p7.png: " in p.stdout and "groups charted" in p.stdout, p.stdout
    assert open(w("re/roofline-p7.png"), "rb").read(4) == b"\x89PNG"
    assert os.path.getsize(w("re/roofline-p7.svg")) > 1000
    p = run([a.npuc, "explore", "report", os.path.join(out, "results.jsonl"), "--no-plots",
             "--roofline", "8"], ok=False)
    assert "--roofline 8: the sweep's points are 0 to 7" in p.stderr, p.stderr

    # Bad input: the field is named, exit status 1, nothing written.
    with open(w("bad.yaml"), "w") as f:
        f.write(spec.replace("memory.l1.size, values", "memory.l1.sise, values"))
    p = run([a.npuc, "explore", w("bad.yaml")], ok=False)
    assert "npuc: error:" in p.stderr and "axes[1] (memory.l1.sise)" in p.stderr, p.stderr
    assert "the base target has no field 'memory.l1.sise'" in p.stderr, p.stderr
    assert not os.path.exists(w("bad.explore"))
    p = run([a.npuc, "explore", "report", os.path.join(out, "results.jsonl"), "--objectives",
             "speed"], ok=False)
    assert "--objectives: unknown objective 'speed'" in p.stderr, p.stderr
    p = run([a.npuc, "explore"], ok=False)
    assert "give a sweep spec" in p.stderr, p.stderr
    # Another sweep's results are never appended to.
    with open(w("other.yaml"), "w") as f:
        f.write(spec.replace("[[8, 8], [16, 16]]", "[[8, 8], [32, 32]]"))
    p = run([a.npuc, "explore", w("other.yaml"), "-o", out], ok=False)
    assert "holds the results of another sweep" in p.stderr, p.stderr
    print("cli explore checks passed")


if __name__ == "__main__":
    main()
