"""Products of int8-quantized activations with Q4_1 and Q8_0 weights in integer arithmetic
(AVX2), compiled by numba: the decode products of ``act_quant`` weights.

llama.cpp multiplies a quantized weight by activations rounded to int8 blocks
(``block_q8_1``: 32 values, one scale), so each block's dot product is a sum of integer
products: AVX2's ``vpmaddubsw`` multiplies 32 unsigned by 32 signed bytes and adds pairs
into 16-bit lanes, ``vpmaddwd`` adds those pairs into eight 32-bit sums, and one float
multiply-add per block applies the two scales. Per 32 weights that is about a third of the
instructions of the float32 loop of :mod:`fgrad.llm._qmv_numba` (which converts every
weight to a float): 0.08 against 0.21 ns a weight for a Q4_1 matrix on one Zen 3 thread.

* **Activations** (:func:`fgrad.llm.quants.q8_roundtrip` is the same rounding in numpy):
  each block of 32 values of a row gets the scale ``d = max|x| / 127`` and the values
  ``q = rint(x * (127 / max|x|))`` (``[-127, 127]``, ties to even; all zeros where the
  block is), in float32 arithmetic as numpy rounds it, so both paths round every value
  alike. A block holding NaN or an infinity gets a NaN scale: its products are NaN.
* **Q4_1** (``d_w q + m_w``, ``q`` 4-bit): a block's product is ``d_w d_a sum(q q_a) +
  m_w d_a sum(q_a)``; ``vpmaddubsw`` takes the nibbles as the unsigned operand (at most
  ``2 * 15 * 127``: no 16-bit saturation). **Q8_0** (``d_w q``, ``q`` int8):
  ``vpmaddubsw(|q|, sign(q) q_a)``, llama.cpp's trick for two signed operands (at most
  ``2 * 128 * 127``).
* The row loop is LLVM IR written here (:func:`_row_function`), called through a numba
  intrinsic (:mod:`fgrad.llm._q8_kernels`, with the loops around it): numba has no
  vector types, and LLVM does not find ``vpmaddubsw`` in scalar code. Each block's eight
  sums stay in a vector register across the row, summed once at the end. Threads as in :mod:`fgrad.llm._qmv_numba`: one chunk of every matrix per
  thread, the same loop either way, chosen by :mod:`fgrad.transforms.numba_threads`.

Used where the CPU has AVX2 (LLVM's host features) and numba is installed; elsewhere the
products take the float path on the rounded activations (the same values up to float
rounding of the sums).

Reference: llama.cpp, ``ggml/src/ggml-cpu/arch/x86/quants.c`` (``ggml_vec_dot_q4_1_q8_1``,
``ggml_vec_dot_q8_0_q8_0``): the integer formulation; this code is written from the
instruction set's definitions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fgrad.transforms import cpu_compile

__all__ = ["QTYPES", "available", "matvec", "roundtrip"]

QTYPES = ("Q4_1", "Q8_0")
_BYTES = {"Q4_1": 20, "Q8_0": 34}  # per block of 32 weights


@functools.cache
def available() -> bool:
    """Whether numba is installed and the CPU has AVX2 (what the row loop's instructions
    need)."""
    if not cpu_compile.available():
        return False
    import llvmlite.binding as llvm

    try:
        return bool(llvm.get_host_cpu_features().get("avx2", False))
    except Exception:  # noqa: BLE001  (a platform llvmlite cannot query)
        return False


def _row_function(module: Any, qtype: str) -> Any:
    """``float row(i8* w, i8* qa, float* da, float* sa, i64 n_blocks)``: one weight row
    (``n_blocks`` packed blocks at ``w``) times one activation row (int8 values ``qa``,
    block scales ``da``, block sums ``sa = da * sum(qa)``), defined once per module."""
    from llvmlite import ir

    name = f"fgrad_{qtype.lower()}_q8_row"
    if name in module.globals:
        return module.globals[name]
    i8, i16, i32, i64, f32 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.FloatType()
    v32i8, v16i8, v16i16, v8i32, v8f32 = (ir.VectorType(i8, 32), ir.VectorType(i8, 16),
                                           ir.VectorType(i16, 16), ir.VectorType(i32, 8),
                                           ir.VectorType(f32, 8))
    fn = ir.Function(module, ir.FunctionType(f32, [i8.as_pointer(), i8.as_pointer(),
                                                   f32.as_pointer(), f32.as_pointer(), i64]), name)
    fn.linkage = "internal"
    w, qa, da, sa, n_blocks = fn.args
    madd_bytes = module.declare_intrinsic("llvm.x86.avx2.pmadd.ub.sw",
                                          fnty=ir.FunctionType(v16i16, [v32i8, v32i8]))
    madd_words = module.declare_intrinsic("llvm.x86.avx2.pmadd.wd",
                                          fnty=ir.FunctionType(v8i32, [v16i16, v16i16]))
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))

    def const(ty, value):
        return ir.Constant(ty, value)

    def half(b, ptr):  # a binary16 at a byte address, as float
        return b.fpext(b.load(b.bitcast(ptr, ir.HalfType().as_pointer()), align=1), f32)

    b = ir.IRBuilder(entry)
    zeros = const(v8f32, [0.0] * 8)
    b.cbranch(b.icmp_signed(">", n_blocks, const(i64, 0)), loop, done)

    b = ir.IRBuilder(loop)
    k, acc, macc = b.phi(i64), b.phi(v8f32), b.phi(f32)
    k.add_incoming(const(i64, 0), entry)
    acc.add_incoming(zeros, entry)
    macc.add_incoming(const(f32, 0.0), entry)
    block = b.gep(w, [b.mul(k, const(i64, _BYTES[qtype]))])
    act = b.load(b.bitcast(b.gep(qa, [b.mul(k, const(i64, 32))]), v32i8.as_pointer()), align=1)
    scale_a = b.load(b.gep(da, [k]))
    if qtype == "Q4_1":
        packed = b.load(b.bitcast(b.gep(block, [const(i64, 4)]), v16i8.as_pointer()), align=1)
        low = b.and_(packed, const(v16i8, [15] * 16))  # weights 0..15
        high = b.lshr(packed, const(v16i8, [4] * 16))  # weights 16..31
        unsigned = b.shuffle_vector(low, high, const(ir.VectorType(i32, 32), list(range(32))))
        signed = act
        offset = b.fmul(half(b, b.gep(block, [const(i64, 2)])), b.load(b.gep(sa, [k])))
        macc_next = b.fadd(macc, offset)
    else:  # Q8_0: |q| unsigned, the activations carry q's sign
        q = b.load(b.bitcast(b.gep(block, [const(i64, 2)]), v32i8.as_pointer()), align=1)
        absolute = module.declare_intrinsic("llvm.abs.v32i8",
                                            fnty=ir.FunctionType(v32i8, [v32i8, ir.IntType(1)]))
        sign = module.declare_intrinsic("llvm.x86.avx2.psign.b",
                                        fnty=ir.FunctionType(v32i8, [v32i8, v32i8]))
        unsigned = b.call(absolute, [q, const(ir.IntType(1), 0)])
        signed = b.call(sign, [act, q])
        macc_next = macc
    pairs = b.call(madd_bytes, [unsigned, signed])
    sums = b.sitofp(b.call(madd_words, [pairs, const(v16i16, [1] * 16)]), v8f32)
    scale = b.fmul(half(b, block), scale_a)
    splat = b.shuffle_vector(b.insert_element(ir.Constant(v8f32, ir.Undefined), scale, const(i32, 0)),
                             ir.Constant(v8f32, ir.Undefined), const(ir.VectorType(i32, 8), [0] * 8))
    acc_next = b.fadd(acc, b.fmul(sums, splat, flags=["contract"]), flags=["contract"])
    k_next = b.add(k, const(i64, 1))
    k.add_incoming(k_next, loop)
    acc.add_incoming(acc_next, loop)
    macc.add_incoming(macc_next, loop)
    b.cbranch(b.icmp_signed("<", k_next, n_blocks), loop, done)

    b = ir.IRBuilder(done)
    acc_end, macc_end = b.phi(v8f32), b.phi(f32)
    acc_end.add_incoming(zeros, entry)
    acc_end.add_incoming(acc_next, loop)
    macc_end.add_incoming(const(f32, 0.0), entry)
    macc_end.add_incoming(macc_next, loop)
    lanes = [b.extract_element(acc_end, const(i32, j)) for j in range(8)]
    while len(lanes) > 1:  # pairwise
        lanes = [b.fadd(lanes[j], lanes[j + 1]) for j in range(0, len(lanes), 2)]
    b.ret(b.fadd(lanes[0], macc_end))
    return fn


@functools.cache
def roundtrip() -> Callable | None:
    """``f(x) -> x`` rounded as :func:`fgrad.llm.quants.q8_roundtrip` (to the bit), for a
    2-D float32 ``x``: one compiled pass instead of numpy's dozen (a prefill's activations
    ahead of the float products); None without numba."""
    if not cpu_compile.available():
        return None
    import numpy as np

    from fgrad.llm import _q8_kernels

    return lambda x: _q8_kernels.rounded(np.ascontiguousarray(x, np.float32))


@functools.cache
def matvec(qtype: str) -> Callable | None:
    """``f(x, blocks) -> (rows, out)`` float32: ``x`` ``(rows, in)`` float32 rounded to int8
    blocks, times each of a tuple of ``(out_i, in // 32, bytes)`` uint8 ``qtype`` weights
    side by side, in integer arithmetic; None without numba or AVX2, or for another type.

    Example:
        >>> import numpy as np, pytest
        >>> if not available(): pytest.skip("needs numba and AVX2")
        >>> from fgrad.llm import quants
        >>> blocks = quants.random_blocks(np.random.default_rng(0), "Q4_1", 4).reshape(2, 2, 20)
        >>> w = quants.dequantize(blocks.reshape(4, 20), "Q4_1").reshape(2, 64)
        >>> x = np.linspace(-1.0, 1.0, 64, dtype=np.float32)[None]
        >>> want = quants.q8_roundtrip(np, x) @ w.T
        >>> bool(np.allclose(matvec("Q4_1")(x, (blocks,)), want, rtol=1e-5, atol=1e-5))
        True
    """
    if qtype not in QTYPES or not available():
        return None
    from fgrad.llm import _q8_kernels
    from fgrad.llm._qmv_numba import side_by_side

    kind = (QTYPES.index(qtype), _BYTES[qtype])  # _q8_kernels' kind and nbytes
    return side_by_side(_q8_kernels.serial, _q8_kernels.parallel, lambda blocks: kind)


def __dir__() -> list[str]:
    return list(__all__)
