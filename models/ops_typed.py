"""ops_typed.py - single-operator cases on integer, bool and double tensors: graph inputs and
outputs of those types, ONNX's integer semantics (truncating Div, Mod's two sign rules, Cast's
truncation and wrap-around) and the data-movement ops on int64. Imported by make_ops.py (family
"typed"); every oracle is numpy, saved in the output's declared type and compared exactly
(make_ops.py's `exact`). Values stay below 2^24, where the compiled targets' fp32 form is exact:
larger ones are the reference's (tests/graph/ReferenceTest.cpp) and a run-time error on the
compiled targets (tests/e2e/cli_typed_cases.py).
"""
import numpy as np
from onnx import TensorProto as TP


def _ints(rng, shape, lo, hi, dtype):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


def add(case, rnd):
    rng = np.random.default_rng(77)
    a64 = _ints(rng, (2, 3, 4), -1000, 1000, np.int64)
    b64 = _ints(rng, (3, 4), -1000, 1000, np.int64)
    nz64 = np.where(b64 == 0, 7, b64)
    i32 = np.array([7, -7, 7, -7, 9, -9, 0, 5], np.int32)
    d32 = np.array([2, 2, -2, -2, 4, 4, 3, -5], np.int32)
    u8 = _ints(rng, (2, 5), 0, 120, np.uint8)
    u8b = _ints(rng, (2, 5), 0, 120, np.uint8)
    f64 = rng.standard_normal((2, 3)).astype(np.float64)
    bools = rng.integers(0, 2, size=(2, 4)).astype(bool)
    bools2 = rng.integers(0, 2, size=(2, 4)).astype(bool)

    def c(name, op, inputs, attrs, expect, out_types, outs=1):
        case("Typed_" + name, "typed", op, inputs, attrs, expect, outs=outs, out_types=out_types,
             exact=True)

    # Arithmetic on int64 (broadcast) and int32; Div truncates toward zero.
    c("Add_i64", "Add", [("t", a64), ("t", b64)], {}, lambda a, b: a + b, [TP.INT64])
    c("Sub_i64", "Sub", [("t", a64), ("t", b64)], {}, lambda a, b: a - b, [TP.INT64])
    c("Mul_i32", "Mul", [("t", i32), ("t", d32)], {}, lambda a, b: a * b, [TP.INT32])
    c("Div_i32_trunc", "Div", [("t", i32), ("t", d32)], {}, _trunc_div, [TP.INT32])
    c("Div_i64_bcast", "Div", [("t", a64), ("t", nz64)], {}, _trunc_div, [TP.INT64])
    c("Max_i64", "Max", [("t", a64), ("t", b64)], {}, np.maximum, [TP.INT64])
    c("Min_u8", "Min", [("t", u8), ("t", u8b)], {}, np.minimum, [TP.UINT8])
    c("Add_u8", "Add", [("t", u8), ("t", u8b)], {}, lambda a, b: a + b, [TP.UINT8])
    # Mod: fmod=0 takes the divisor's sign (numpy.mod), fmod=1 the dividend's (numpy.fmod).
    c("Mod_i32", "Mod", [("t", i32), ("t", d32)], {}, np.mod, [TP.INT32])
    c("Mod_i32_fmod", "Mod", [("t", i32), ("t", d32)], {"fmod": 1}, np.fmod, [TP.INT32])
    c("Neg_i64", "Neg", [("t", a64)], {}, np.negative, [TP.INT64])
    c("Abs_i32", "Abs", [("t", i32)], {}, np.abs, [TP.INT32])
    c("Sign_i64", "Sign", [("t", a64)], {}, np.sign, [TP.INT64])
    # Comparisons and logic: bool results, bool graph inputs.
    c("Equal_i64", "Equal", [("t", a64 % 3), ("t", b64 % 3)], {}, np.equal, [TP.BOOL])
    c("Less_i32", "Less", [("t", i32), ("t", d32)], {}, np.less, [TP.BOOL])
    c("GreaterOrEqual_u8", "GreaterOrEqual", [("t", u8), ("t", u8b)], {}, np.greater_equal,
      [TP.BOOL])
    c("And_bool", "And", [("t", bools), ("t", bools2)], {}, np.logical_and, [TP.BOOL])
    c("Or_bool", "Or", [("t", bools), ("t", bools2)], {}, np.logical_or, [TP.BOOL])
    c("Xor_bool", "Xor", [("t", bools), ("t", bools2)], {}, np.logical_xor, [TP.BOOL])
    c("Not_bool", "Not", [("t", bools)], {}, np.logical_not, [TP.BOOL])
    c("Where_i64", "Where", [("t", bools[:, :3]), ("t", b64[:2, :3]), ("t", a64[0, :2, :3])],
      {}, np.where, [TP.INT64])
    # Casts: float -> int truncates, int -> narrower int wraps, to bool is != 0, bool -> 0/1.
    fl = np.array([[2.9, -2.9, 0.5, -0.5], [100.0, -100.0, 7.0, 0.0]], np.float32)
    c("Cast_f32_to_i32", "Cast", [("x", fl)], {"to": TP.INT32}, lambda x: np.trunc(x),
      [TP.INT32])
    c("Cast_i32_to_u8_wrap", "Cast", [("t", np.array([300, -1, 255, 256, 7], np.int32))],
      {"to": TP.UINT8}, lambda x: x.astype(np.uint8), [TP.UINT8])
    c("Cast_i32_to_i8_wrap", "Cast", [("t", np.array([200, -129, 127, -128, 5], np.int32))],
      {"to": TP.INT8}, lambda x: x.astype(np.int8), [TP.INT8])
    c("Cast_i64_to_bool", "Cast", [("t", a64 % 2)], {"to": TP.BOOL}, lambda x: x != 0, [TP.BOOL])
    c("Cast_bool_to_i64", "Cast", [("t", bools)], {"to": TP.INT64}, lambda x: x.astype(np.int64),
      [TP.INT64])
    c("Cast_i64_to_f32", "Cast", [("t", a64)], {"to": TP.FLOAT}, lambda x: x.astype(np.float32),
      [TP.FLOAT])
    # Reductions and index results on integers.
    c("ReduceSum_i64", "ReduceSum", [("t", a64), ("c", np.array([1], np.int64))], {"keepdims": 0},
      lambda x, ax: x.sum(axis=1), [TP.INT64])
    c("ReduceMax_i32", "ReduceMax", [("t", i32.reshape(2, 4))], {"axes": [1]},
      lambda x: x.max(axis=1, keepdims=True), [TP.INT32], )
    c("ArgMax_i64", "ArgMax", [("t", a64)], {"axis": 2, "keepdims": 0},
      lambda x: np.argmax(x, axis=2), [TP.INT64])
    c("CumSum_i32", "CumSum", [("t", i32.reshape(2, 4)), ("c", np.array(1, np.int64))], {},
      lambda x, ax: np.cumsum(x, axis=1).astype(np.int32), [TP.INT32])
    # Data movement keeps the type: int64 data gathered by int64 indices, reshaped, transposed.
    idx = np.array([[2, 0], [1, 2]], np.int64)
    c("Gather_i64", "Gather", [("t", a64), ("t", idx)], {"axis": 1},
      lambda x, i: np.take(x, i, axis=1), [TP.INT64])
    c("Transpose_i64", "Transpose", [("t", a64)], {"perm": [2, 0, 1]},
      lambda x: np.transpose(x, (2, 0, 1)), [TP.INT64])
    c("Concat_i32", "Concat", [("t", i32.reshape(2, 4)), ("t", d32.reshape(2, 4))], {"axis": 0},
      lambda a, b: np.concatenate([a, b], 0), [TP.INT32])
    c("Reshape_u8", "Reshape", [("t", u8), ("c", np.array([5, 2], np.int64))], {},
      lambda x, s: x.reshape(5, 2), [TP.UINT8])
    c("Slice_bool", "Slice", [("t", bools), ("c", np.array([1], np.int64)),
                              ("c", np.array([3], np.int64)), ("c", np.array([1], np.int64))],
      {}, lambda x, s, e, a: x[:, 1:3], [TP.BOOL])
    # Pow on integers (the result has the base's type): an integer exponent exactly, a negative
    # one truncates 1/b^n toward zero; a float exponent truncates the power. BitShift on the
    # unsigned types, past the type's width too (numpy gives 0 for a right shift by >= 64).
    pb = np.array([3, -2, 5, 1, -1, 2, 7, 0], np.int64)
    pe = np.array([4, 3, 0, -3, -3, -1, 2, 9], np.int64)
    c("Pow_i64", "Pow", [("t", pb), ("t", pe)], {},
      lambda b, e: np.array([int(x) ** int(y) if y >= 0 else int(1 / x ** -y) if x else 0
                             for x, y in zip(b, e)], np.int64), [TP.INT64])
    c("Pow_i32_f32", "Pow", [("t", np.array([2, 3, 10, 9, 5], np.int32)),
                             ("t", np.array([0.5, 2.0, 1.5, 0.5, -1.0], np.float32))], {},
      lambda b, e: np.trunc(np.power(b.astype(np.float64), e.astype(np.float64))).astype(
          np.int32), [TP.INT32])
    u16 = np.array([1, 3, 255, 4096, 40000, 7], np.uint16)
    sh16 = np.array([0, 4, 8, 3, 1, 2], np.uint16)
    c("BitShift_left_u16", "BitShift", [("t", np.array([1, 3, 255, 4096, 20000, 7], np.uint16)),
                                        ("t", sh16)], {"direction": "LEFT"},
      lambda a, b: np.left_shift(a, b), [TP.UINT16])
    c("BitShift_right_u16", "BitShift", [("t", u16), ("t", sh16)], {"direction": "RIGHT"},
      lambda a, b: np.right_shift(a, b), [TP.UINT16])
    c("BitShift_right_u32_bcast", "BitShift",
      [("t", np.array([[1000000, 5], [16777215, 0]], np.uint32)),
       ("t", np.array([3, 70], np.uint32))], {"direction": "RIGHT"},
      lambda a, b: np.where(b >= 32, 0, np.right_shift(a, np.minimum(b, 31))).astype(np.uint32),
      [TP.UINT32])
    # Double in and out (computed in fp32: values well inside rtol 1e-4 of numpy's).
    case("Typed_Add_f64", "typed", "Add", [("t", f64), ("t", f64[:1])], {},
         lambda a, b: a + b, out_types=[TP.DOUBLE])
    case("Typed_Sqrt_f64", "typed", "Sqrt", [("t", np.abs(f64))], {}, np.sqrt,
         out_types=[TP.DOUBLE])
