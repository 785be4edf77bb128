#!/usr/bin/python3
"""MPI checks of `npuc explore` (explore/Mpi.h): with 3 ranks on loopback (`mpirun
--oversubscribe -np 3`), a 30-point sweep gives the records a serial run gives; a sweep under
mpirun killed part-way and run again ends with the same set; a rank that loads another sweep
aborts the job with a message."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import cli_check  # noqa: E402
from cli_check import MPI_ENV as ENV, parse_args  # noqa: E402


def run(args, ok=True):
    return cli_check.run(args, ok, env=ENV, timeout=240)


def records(path):
    """Records by index, without wall times (the only fields that may differ)."""
    out = {}
    for line in open(path).read().splitlines()[1:]:
        r = json.loads(line)
        r.pop("timing", None)
        for m in r.get("models", {}).values():
            m.pop("timing", None)
        out[r["index"]] = r
    return out


def main():
    a = parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    w = lambda f: os.path.join(a.work, f)
    model = os.path.join(a.root, "models", "tinycnn.onnx")
    # Ten copies of tinycnn per point make a point slow enough (~0.2 s) to kill a sweep mid-way.
    models = "".join(f"  - {{path: {model}, name: t{i}}}\n" for i in range(10))
    spec = f"""base: {os.path.join(a.root, "configs", "npu-base.yaml")}
models:
{models}axes:
  - {{name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [16, 16], [32, 32]]}}
  - {{param: memory.l1.size, values: [512 KiB, 1 MiB]}}
  - {{param: dram.bytes_per_cycle, values: [4, 8, 12, 16, 32]}}
objectives: [cycles, energy_uj]
allow_cpu_groups: true
"""
    with open(w("sweep.yaml"), "w") as f:
        f.write(spec)
    mpirun = ["mpirun", "--oversubscribe", "-np", "3"]

    run([a.npuc, "explore", w("sweep.yaml"), "-o", w("serial"), "--no-plots"])
    serial = records(w("serial/results.jsonl"))
    assert len(serial) == 30, len(serial)

    p = run(mpirun + [a.npuc, "explore", w("sweep.yaml"), "-o", w("mpi"), "--no-plots"])
    assert "MPI: rank 0 coordinates 2 worker rank(s)" in p.stderr, p.stderr
    assert p.stdout.count("30 point(s) visited") == 1, p.stdout  # rank 0 alone reports
    assert records(w("mpi/results.jsonl")) == serial, "MPI and serial records differ"

    # Kill the job once a few records are in, then resume it.
    os.makedirs(w("killed"))
    proc = subprocess.Popen(mpirun + [a.npuc, "explore", w("sweep.yaml"), "-o", w("killed"),
                                      "--no-plots"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                            start_new_session=True)
    path = w("killed/results.jsonl")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(path) and len(open(path).read().splitlines()) >= 6:
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    p = run(mpirun + [a.npuc, "explore", w("sweep.yaml"), "-o", w("killed"), "--no-plots"])
    m = re.search(r"30 point\(s\) visited: (\d+) already in", p.stdout)
    assert m and 5 <= int(m.group(1)) <= 30, p.stdout  # the records written before the kill
    assert records(path) == serial, "killed and resumed records differ from serial"

    # Ranks that load different sweeps: the job fails with the reason.
    with open(w("sweep.yaml")) as f:
        text = f.read()
    os.makedirs(w("bad"))
    with open(w("bad/rank.sh"), "w") as f:
        f.write(f"""#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then spec={w("other.yaml")}; else spec={w("sweep.yaml")}; fi
exec {a.npuc} explore "$spec" -o {w("bad/out")} --no-plots
""")
    os.chmod(w("bad/rank.sh"), 0o755)
    with open(w("other.yaml"), "w") as f:
        f.write(text.replace("[4, 8, 12, 16, 32]", "[4, 8]"))
    p = run(mpirun + [w("bad/rank.sh")], ok=False)
    assert "every rank must read the same spec" in p.stderr, p.stderr
    print("cli explore MPI checks passed")


if __name__ == "__main__":
    main()
