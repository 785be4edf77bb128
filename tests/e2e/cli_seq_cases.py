#!/usr/bin/python3
"""cli_seq_cases.py - CLI tests of the sequence and optional operators' user errors (npuc resolves
them at import, frontend/OnnxSequence.cpp): a position computed at run time (and the same model
with it bound), positions out of range, a sequence or optional graph input or output, a sequence
read by a tensor operator, an empty optional's element, a split that does not add up. Run through
cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture; the models need the
`onnx` package (skipped without it).
"""
from cli_check import SKIP, write_npy


def _onnx():
    try:
        import onnx
        from onnx import helper
    except ImportError:
        print("SKIP: no onnx module")
        raise SystemExit(SKIP)
    return onnx, helper


def _save(c, name, nodes, inputs, outputs, inits=()):
    """A model of opset 17 over float [2, 3] inputs (or the given value infos)."""
    onnx, helper = _onnx()
    from onnx import TensorProto

    def info(v):
        return helper.make_tensor_value_info(v, TensorProto.FLOAT, [2, 3]) \
            if isinstance(v, str) else v
    g = helper.make_graph(nodes, name, [info(v) for v in inputs], [info(v) for v in outputs],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = c.w(name + ".onnx")
    onnx.save(m, path)
    return path


def _pos(name, value):
    from onnx import numpy_helper
    import numpy as np
    return numpy_helper.from_array(np.array(value, np.int64), name)


def case_seq_errors(c):
    onnx, helper = _onnx()
    from onnx import TensorProto
    pkg, out = c.w("m.npub"), c.w("out")
    x, pos = c.w("x.npy"), c.w("pos.npy")
    write_npy(x, (2, 3), values=[float(i) for i in range(6)])
    write_npy(pos, (), dtype="<i8", values=[-1])
    compile_ = ["compile", "--target", "cpu", "-o", pkg]

    # A position that is a graph input: it selects which tensor the result is, so it must be
    # known at compile time; --bind pins it, and then the model runs.
    seq_at = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
              helper.make_node("SequenceAt", ["s", "pos"], ["y"], name="at")]
    model = _save(c, "runtime_pos", seq_at,
                  ["a", "b", helper.make_tensor_value_info("pos", TensorProto.INT64, [])], ["y"])
    c.expect_fail(compile_[:1] + [model] + compile_[1:],
                  ["node 'at' (SequenceAt): position (input 1) is read at compile time: it must "
                   "be a constant, but it is graph input 'pos'; pin it with --bind "
                   "pos=FILE.npy"], [pkg])
    c.expect_ok(["ref", model, "--input", "a=" + x, "--input", "b=" + x, "--bind", "pos=" + pos,
                 "--output-dir", out])

    def fail(name, nodes, inputs, outputs, want, inits=()):
        m = _save(c, name, nodes, inputs, outputs, inits)
        c.expect_fail(["compile", m, "--target", "cpu", "-o", pkg], want, [pkg])

    # Out of range: the node, the position and the length.
    fail("at_range", [helper.make_node("SequenceConstruct", ["a", "a", "a"], ["s"]),
                      helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")],
         ["a"], ["y"], ["node 'at' (SequenceAt): position 3 is out of range for a sequence of "
                        "length 3 (valid: -3 to 2)"], [_pos("p", 3)])
    fail("insert_range", [helper.make_node("SequenceConstruct", ["a", "a"], ["s"]),
                          helper.make_node("SequenceInsert", ["s", "a", "p"], ["t"], name="ins"),
                          helper.make_node("SequenceAt", ["t", "p"], ["y"])],
         ["a"], ["y"], ["node 'ins' (SequenceInsert): position -3 is out of range for a sequence "
                        "of length 2 (valid: -2 to 2)"], [_pos("p", -3)])
    fail("erase_empty", [helper.make_node("SequenceEmpty", [], ["s"]),
                         helper.make_node("SequenceErase", ["s"], ["t"], name="er"),
                         helper.make_node("SequenceLength", ["t"], ["n"]),
                         helper.make_node("Cast", ["n"], ["y"], to=TensorProto.FLOAT)],
         [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
         ["node 'er' (SequenceErase): the sequence is empty (length 0); there is no last "
          "element to erase"])
    # A sequence graph input or output: npuc's command line feeds and writes tensors only.
    seq_type = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    fail("seq_input", [helper.make_node("SequenceAt", ["s", "p"], ["y"])], [seq_type], ["y"],
         ["graph input 's' is a sequence (seq(tensor(float))); npuc feeds and writes tensors "
          "only"], [_pos("p", 0)])
    fail("seq_output", [helper.make_node("SequenceConstruct", ["a"], ["s"])], ["a"], [seq_type],
         ["graph output 's' is a sequence (seq(tensor(float)))"])
    # A sequence read by a tensor operator.
    fail("seq_to_relu", [helper.make_node("SequenceConstruct", ["a"], ["s"]),
                         helper.make_node("Relu", ["s"], ["y"], name="r")], ["a"], ["y"],
         ["node 'r' (Relu): 's' is a sequence; only the sequence and optional operators take "
          "one"])
    # The element of an empty optional.
    fail("empty_optional",
         [helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(
             TensorProto.FLOAT, [2, 3])),
          helper.make_node("OptionalGetElement", ["o"], ["y"], name="get")], [], ["y"],
         ["node 'get' (OptionalGetElement): input 'o' is an empty optional (known at compile "
          "time), so there is no element to get"])
    # A split list that does not cover the axis.
    fail("split_sum", [helper.make_node("SplitToSequence", ["a", "p"], ["s"], name="sp", axis=1),
                       helper.make_node("SequenceAt", ["s", "z"], ["y"])], ["a"], ["y"],
         ["node 'sp' (SplitToSequence): split sums to 4, but the input's axis extent is 3"],
         [_pos("p", [1, 3]), _pos("z", 0)])
