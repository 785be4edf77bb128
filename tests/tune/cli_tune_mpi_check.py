#!/usr/bin/python3
"""MPI checks of `npuc tune` (tools/cli/Tune.cpp on mpi/Executor.h): with 3 ranks on loopback
(`mpirun --oversubscribe -np 3`), rank 0 tunes and two worker ranks measure, and the tuning log
holds the records a serial run writes (the same points, in the same order, with the same
cycles; only the wall times differ); a run killed part-way and run again under mpirun ends with
the serial log; ranks that compile different models abort the job with a message."""
import json
import os
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
    """The log's records without their wall times (the only fields that may differ)."""
    out = []
    for line in open(path).read().splitlines():
        r = json.loads(line)
        r.pop("seconds", None)
        out.append(r)
    return out


def main():
    a = parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    w = lambda f: os.path.join(a.work, f)
    model = os.path.join(a.root, "models", "tinycnn.onnx")
    target = os.path.join(a.root, "configs", "npu-base.yaml")
    tune = lambda log, trials=48: [a.npuc, "tune", model, "--target", target, "--trials",
                                   str(trials), "--seed", "3", "--log", log]
    mpirun = ["mpirun", "--oversubscribe", "-np", "3"]

    run(tune(w("serial.jsonl")) + ["--jobs", "1"])
    serial = records(w("serial.jsonl"))
    assert len(serial) == 48, len(serial)

    p = run(mpirun + tune(w("mpi.jsonl")))
    assert "MPI: rank 0 tunes, 2 worker rank(s) measure" in p.stderr, p.stderr
    assert p.stdout.count("48 trials (0 from the log)") == 1, p.stdout  # rank 0 alone reports
    assert "on 2 MPI worker rank(s)" in p.stdout, p.stdout
    assert records(w("mpi.jsonl")) == serial, "MPI and serial tuning records differ"

    # Kill the job once some records are in, then resume it under mpirun.
    path = w("killed.jsonl")
    proc = subprocess.Popen(mpirun + tune(path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(path) and len(open(path).read().splitlines()) >= 12:
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # A line cut short by the kill is the log's to drop (tune/Records.h).
    run(mpirun + tune(path))
    assert records(path) == serial, "killed and resumed records differ from serial"

    # Ranks that compile different models: the job fails with the reason.
    with open(w("rank.sh"), "w") as f:
        other = os.path.join(a.root, "models", "mlp.onnx")
        f.write(f"""#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then m={other}; else m={model}; fi
exec {a.npuc} tune "$m" --target {target} --trials 8 --log {w("bad.jsonl")}
""")
    os.chmod(w("rank.sh"), 0o755)
    p = run(mpirun + [w("rank.sh")], ok=False)
    assert "every rank must read the same model and target" in p.stderr, p.stderr
    print("cli tune MPI checks passed")


if __name__ == "__main__":
    main()
