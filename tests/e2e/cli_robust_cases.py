#!/usr/bin/python3
"""cli_robust_cases.py - CLI tests of hostile and careless inputs (issue 18): outputs that would
replace a FIFO or an input, unbounded thread counts, targets larger than their address fields or
with duplicate YAML keys, malformed .npy headers, weak messages, and the simulator's work
budget. Run through cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture.
"""
import os
import stat
import struct
import time

from cli_check import run, write_npy


def write_raw_npy(path, shape_text, data_bytes):
    """A .npy file whose header's shape is `shape_text` verbatim (it may be malformed)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(b"\0" * data_bytes)


def case_safe_outputs(c):
    c.require(c.model, c.target)
    model = c.w("model.onnx")
    with open(c.model, "rb") as f:
        original = f.read()
    with open(model, "wb") as f:
        f.write(original)
    # -o naming the input model, directly or through a symbolic link: refused, model intact.
    alias = c.w("alias.onnx")
    os.symlink(model, alias)
    for out in (model, alias):
        c.expect_fail(["compile", model, "--target", c.target, "-o", out],
                      [out + ": is an input of this command (" + model + ")"], [])
        with open(model, "rb") as f:
            assert f.read() == original, "the model was overwritten through " + out
    # A FIFO (or a device such as /dev/null) is never replaced by a regular file.
    fifo = c.w("out.fifo")
    os.mkfifo(fifo)
    c.expect_fail(["compile", model, "--target", c.target, "-o", fifo],
                  [fifo + ": is a FIFO; refusing to replace it"], [])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    # A missing directory: the reason is the system's.
    missing = c.w("no/such/dir/out.npub")
    c.expect_fail(["compile", model, "--target", c.target, "-o", missing],
                  [missing + ": cannot write file: No such file or directory"], [])
    # A link to an existing package is written through and stays a link.
    pkg, link = c.w("real.npub"), c.w("link.npub")
    with open(pkg, "w") as f:
        f.write("old")
    os.symlink(pkg, link)
    c.expect_ok(["compile", model, "--target", c.target, "-o", link])
    assert os.path.islink(link) and os.path.getsize(pkg) > 3
    # run: a --report naming an --input file is refused before anything is written.
    inp = c.w("x.npy")
    write_npy(inp, (1, 3, 32, 32))
    outdir = c.w("out")
    c.expect_fail(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                   "--report", inp],
                  [inp + ": is an input of this command"], [outdir])
    assert os.path.getsize(inp) == 128 + 4 * 3 * 32 * 32, "the input was overwritten"
    # asm: -o naming the source program.
    src = c.w("p.s")
    with open(src, "w") as f:
        f.write("finish\n")
    c.expect_fail(["asm", src, "--target", c.target, "-o", src],
                  [src + ": is an input of this command"], [])
    leftovers = [n for n in os.listdir(c.work) if ".tmp." in n]
    assert not leftovers, leftovers


def case_thread_bounds(c):
    c.require(c.model, c.target)
    pkg = c.w("p.npub")
    c.expect_fail(["compile", c.model, "--target", "cpu", "-o", pkg, "--threads", "100000"],
                  ["--threads: Value 100000 not in range 1 to 1024"], [pkg])
    c.expect_ok(["compile", c.model, "--target", "cpu", "-o", pkg, "--threads", "1024"])
    outdir = c.w("out")
    for bad in ("0", "1025", "1000000"):
        c.expect_fail(["run", pkg, "--output-dir", outdir, "--threads", bad],
                      ["--threads: Value %s not in range 1 to 1024" % bad], [outdir])
    c.expect_fail(["tune", c.model, "--target", c.target, "--trials", "1", "--log",
                   c.w("t.jsonl"), "--jobs", "5000"],
                  ["--jobs: Value 5000 not in range 1 to 1024"], [c.w("t.jsonl")])


def case_target_limits(c):
    c.require(c.model)
    out = c.w("out.npub")
    # A 1 GiB L1 against 24-bit on-chip addresses: rejected at load, at once.
    big = c.edited_target(lambda ls: [l.replace("size: 1 MiB, banks: 16", "size: 1 GiB, banks: 16")
                                      for l in ls])
    start = time.time()
    c.expect_fail(["compile", c.model, "--target", big, "-o", out],
                  ["edited.yaml: memory[1] (l1).size: 1073741824 bytes, but instructions[",
                   "(24 bits) addresses at most 16777216 bytes"], [out])
    assert time.time() - start < 30
    # Deleting `- mnemonic: vop` merges two instructions' keys: a duplicate key, not exit 0.
    def drop_vop(lines):
        i = [k for k, l in enumerate(lines) if l.strip().startswith("- mnemonic: vop")]
        assert len(i) == 1
        case_target_limits.line = 1 + next(k for k in range(i[0], len(lines))
                                           if lines[k].strip().startswith("opcode:")) - 1
        return lines[:i[0]] + lines[i[0] + 1:]
    merged = c.edited_target(drop_vop)
    c.expect_fail(["compile", c.model, "--target", merged, "-o", out],
                  ["edited.yaml:%d:5: duplicate key 'opcode'" % case_target_limits.line], [out])


def case_npy_strict(c):
    pkg = c.compile_tinycnn()
    outdir = c.w("out")
    for shape, needle in (("(1, -3, 32, 32)", "dimension '-3' is not a non-negative integer"),
                          ("(1, 3x, 32, 32)", "dimension '3x' is not a non-negative integer")):
        bad = c.w("bad.npy")
        write_raw_npy(bad, shape, 4 * 3 * 32 * 32)
        c.expect_fail(["run", pkg, "--input", "input=" + bad, "--output-dir", outdir],
                      [bad + ": malformed .npy header: shape " + shape, needle], [outdir])
    huge = c.w("huge.npy")
    write_raw_npy(huge, "(1099511627776,)", 16)
    c.expect_fail(["run", pkg, "--input", "input=" + huge, "--output-dir", outdir],
                  [huge + ": truncated data: shape 1099511627776 needs more than the 16 bytes"],
                  [outdir])


def case_messages(c):
    c.require(c.target)
    out = c.w("out.npub")
    d = c.w("model_dir.onnx")
    os.makedirs(d)
    c.expect_fail(["compile", d, "--target", c.target, "-o", out],
                  [d + ": is a directory, not a file"], [out])
    rc, _, err = run(c.npuc, ["compil", "x"])
    assert rc == 1 and "unknown subcommand 'compil'; the subcommands are: compile, tune" in err, err
    pkg = c.compile_tinycnn()
    c.expect_fail(["sim", pkg, "--target", c.target],
                  [pkg + ": is an npuc package (a compiled model), not a program; run it with "
                   "`npuc run " + pkg + "`"], [])


def case_sim_budget(c):
    c.require(c.target)
    src = c.w("big.s")
    with open(src, "w") as f:  # 65535^3 elements copied onto themselves (strides 0)
        f.write("vop op=copy dst_space=l1 dst_addr=0 dst_dtype=fp16 src1_space=l1 src1_addr=0"
                " src1_dtype=fp16 n0=65535 n1=65535 n2=65535\nfinish\n")
    start = time.time()
    c.expect_fail(["sim", src, "--target", c.target, "--report", c.w("r.json")],
                  ["the functional simulation needs 281462092005375 element operations, over "
                   "its budget of 1099511627776", "instruction 0 (vop)", "--max-work"],
                  [c.w("r.json")])
    c.expect_fail(["sim", src, "--target", c.target, "--max-work", "1000"],
                  ["over its budget of 1000"], [])
    c.expect_ok(["sim", src, "--target", c.target, "--timing-only"])
    assert time.time() - start < 60
