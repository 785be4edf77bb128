#!/usr/bin/python3
"""CLI checks of the hand-written-program flow: `npuc asm` -> `npuc disasm PROG.bin --target T`
-> `npuc asm` reproduces the bytes; `npuc sim` with regions (--dram-init FILE@REGION, --dump
REGION=FILE.npy), --timing-only (same cycles, no data), --no-check (a racy program runs), the
report's new fields, and hazard messages. Expected values are derived here from the program."""
import json
import os
import sys

import numpy as np

PROG = """# y = relu(x) for 32 fp16 values, through L1
.region x   dram 0x0    64 fp16 4x8
.region y   dram 0x1000 64 fp16 4x8
.region buf l1   0x0    64
.region res l1   0x400  64 fp16
load:  ld  push=vector src_addr=x dst_space=l1 dst_addr=buf elem_bytes=2 n0=32 n1=1 n2=1 src_s0=1 dst_s0=1
relu:  vop pop=load push=store op=relu dst_space=l1 dst_addr=res dst_dtype=fp16 src1_space=l1 src1_addr=buf src1_dtype=fp16 n0=32 n1=1 n2=1 dst_s0=1 src1_s0=1
store: st  pop=vector src_space=l1 src_addr=res dst_addr=y elem_bytes=2 n0=32 n1=1 n2=1 src_s0=1 dst_s0=1
       finish
"""


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_check import parse_args, run  # noqa: E402


def main():
    a = parse_args()
    os.makedirs(a.work, exist_ok=True)
    w = lambda f: os.path.join(a.work, f)
    target = os.path.join(a.root, "configs", "npu-base.yaml")
    with open(w("prog.s"), "w") as f:
        f.write(PROG)

    # asm -> disasm -> asm: identical bytes.
    run([a.npuc, "asm", w("prog.s"), "--target", target, "-o", w("prog.bin")])
    dis = run([a.npuc, "disasm", w("prog.bin"), "--target", target]).stdout
    assert "ld push=vector" in dis and "vop pop=load push=store op=relu" in dis, dis
    with open(w("dis.s"), "w") as f:
        f.write(dis)
    run([a.npuc, "asm", w("dis.s"), "--target", target, "-o", w("dis.bin")])
    assert open(w("prog.bin"), "rb").read() == open(w("dis.bin"), "rb").read(), "round trip"

    # Functional run with regions.
    x = (np.arange(32, dtype=np.float32) - 15.5).astype(np.float16)
    x.tofile(w("x.bin"))
    run([a.npuc, "sim", w("prog.s"), "--target", target, "--dram-init", w("x.bin") + "@x",
         "--dump", "y=" + w("y.npy"), "--dump", "res=" + w("res.npy"), "--report", w("f.json"),
         "--trace", w("t.json")])
    y = np.load(w("y.npy"))
    assert y.dtype == np.float16 and y.shape == (4, 8), (y.dtype, y.shape)
    assert np.array_equal(y.reshape(-1), np.maximum(x, 0)), y
    res = np.load(w("res.npy"))
    assert res.shape == (32,) and np.array_equal(res, np.maximum(x, 0))
    f = json.load(open(w("f.json")))
    # Cycles from npu-base.yaml: ld 4 + 100 + 64/16 = 108; vop 2 + ceil(32/16) = 4 -> 112;
    # st 4 + 100 + 64/16 = 108 -> 220; finish (vector, latency 1) 112 -> 113.
    assert f["total_cycles"] == 220, f["total_cycles"]
    assert f["hazard_check"] is True and f["functional"] is True
    assert abs(f["dram_utilization"] - 128 / (16 * 220)) < 1e-9, f["dram_utilization"]
    assert f["engines"]["vector"]["token_wait_cycles"] == 108, f["engines"]["vector"]
    assert f["engines"]["store"]["token_wait_cycles"] == 112, f["engines"]["store"]
    cp = f["critical_path"]
    assert cp["engines"] == {"load": 108, "feed": 0, "tensor": 0, "vector": 4, "store": 108}, cp
    assert cp["other"] == 0, cp
    assert "l1" in f["levels"] and f["levels"]["l1"]["bank_conflict_stall_cycles"] == 0
    # Energy (docs/ENERGY.md defaults): DRAM 64 B read + 64 B written at 160 pJ/B; L1 (64 KiB
    # banks: 1.25 * sqrt(64 / 8) pJ/B) written by ld and vop, read by vop and st; 32 relus at
    # an fp32 add's 0.9 pJ.
    en = f["energy_pj"]
    l1pj = 1.25 * (64 / 8) ** 0.5
    assert en["levels"]["dram"]["bytes_read"] == 64 and en["levels"]["dram"]["bytes_written"] == 64
    assert en["levels"]["l1"]["bytes_read"] == 128 and en["levels"]["l1"]["bytes_written"] == 128
    assert abs(en["levels"]["dram"]["pj"] - 128 * 160) < 1e-6, en
    assert abs(en["levels"]["l1"]["pj"] - 256 * l1pj) < 1e-6, en
    assert en["vector_elements"] == {"relu": 32} and abs(en["vector"] - 32 * 0.9) < 1e-9, en
    assert en["mac"] == 0 and abs(en["total"] - (128 * 160 + 256 * l1pj + 32 * 0.9)) < 1e-6, en
    assert f["area_mm2"]["total"] > 0 and "dram" not in f["area_mm2"]["levels"], f["area_mm2"]
    tr = json.load(open(w("t.json")))
    assert any(e.get("name") == "dram bytes/cycle" for e in tr["traceEvents"])

    # --timing-only: same report numbers, no data (so --dump is refused).
    run([a.npuc, "sim", w("prog.bin"), "--target", target, "--timing-only", "--report",
         w("q.json")])
    q = json.load(open(w("q.json")))
    assert q["functional"] is False
    for k in ("total_cycles", "engines", "critical_path", "dram_utilization", "levels",
              "energy_pj", "area_mm2"):
        assert q[k] == f[k], k
    p = run([a.npuc, "sim", w("prog.s"), "--target", target, "--timing-only", "--dump",
             "y=" + w("z.npy")], ok=False)
    assert "--timing-only run computes no data" in p.stderr, p.stderr

    # A missing token is a hazard by default; --no-check runs it anyway.
    with open(w("race.s"), "w") as fh:
        fh.write(PROG.replace("pop=load push=store", "push=store"))
    p = run([a.npuc, "sim", w("race.s"), "--target", target], ok=False)
    assert "hazard: RAW (read-after-write) race on level 'l1' bytes [0x0, 0x40)" in p.stderr, p.stderr
    assert "pc 0x40 (instruction #1): vop" in p.stderr, p.stderr
    run([a.npuc, "sim", w("race.s"), "--target", target, "--no-check"])
    p = run([a.npuc, "sim", w("prog.s"), "--target", target, "--dump", "nope=" + w("n.npy")],
            ok=False)
    assert "no region named 'nope'" in p.stderr, p.stderr
    print("ok")


if __name__ == "__main__":
    main()
