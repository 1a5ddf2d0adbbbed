"""Fused elementwise kernels on the CPU: a group of elementwise Nodes runs as one numba loop.

``jit`` on numpy runs one ufunc per node, each a full pass over memory, and numpy's
transcendental functions are no faster than the passes: a GELU is eight of them. Where
numba is installed and ``fgrad.config.cpu_compile`` is on, :func:`fuse_numpy` (what
``fusion.fuse_for`` calls for numpy) renders each of ``fusion.elementwise_groups`` — the
very expressions the CUDA emitter writes for cupy — as a numba loop over the output, which
reads each input once and keeps intermediates in registers. It is the third renderer of
those expressions, beside ``fusion.render_cuda`` and ``fusion.render_numpy``.

The loop runs over the output seen as ``(rows, cols)``: an input varies over both, over
the columns only (a bias), over the rows only, or is one value; a group whose broadcasts
do not split so stays on numpy. ``exp``, ``log`` and ``tanh`` (and the sigmoid and the
GELU gate, which call them) are the functions below, not numba's: numba calls the scalar
C library for ``np.exp``, which stops the loop from being vectorised (4.5 ms for a million
float32 here, against numpy's SIMD loop's 0.6 ms). They are written as range reduction plus a
polynomial (the Cephes library's ``expf``/``exp``/``logf``/``log``/``tanhf``/``tanh``),
with ``2**n`` and the exponent of ``x`` read and built through the float's bits, and only
selects for the special values, so LLVM vectorises them; they are within a few ulp of
numpy's (``tests/transforms/test_fusion_numba.py`` checks them on a dense grid and on the
special values). The other math functions are numba's (libm), arithmetic rounds as the
separate ufuncs do (no contraction into fused multiply-adds), and division by zero gives
numpy's infinities.

Reductions over the last axis join their neighbours (:func:`fusion.row_reduce_groups`,
:func:`render_rows`): elementwise ops over rows, sum/max/min of a row, elementwise ops on
the per-row results and row ops reading them broadcast back, as in softmax
``exp(x - max(x)) / sum(...)`` or layer-norm's mean and variance, run as one loop over
rows, each row in a few passes over values kept in a row buffer that stays in cache. Row
sums are reassociated (vectorised; see :func:`_row_functions`), so they differ from
numpy's pairwise sums in the last bits; max and min are exact.

Each kernel is compiled from one source as a serial loop and, for groups of at least
:data:`PARALLEL_SIZE` elements, also as a ``parallel=True`` one whose ``prange`` runs
over the rows (or, for few rows, over chunks of each row) on numba's threads. Which one
a call runs is ``fgrad.transforms.numba_threads``' policy, shared with fgrad's other
compiled kernels: the one that has been faster lately (on the shared machine threads
halve a loop's time when the second core is idle and slow it down when another process
holds that core), one parallel kernel at a time in the process (numba's ``workqueue``
threading layer aborts on concurrent entry; a second thread runs the serial loop), and
the serial loop where numba has one thread.

Fusing costs a compile (about 0.1-0.5 s a group, once: kernels are cached on disk keyed by
the generated source, as ``cpu_compile``'s loops) and a few microseconds a call, so a group
fuses only where it pays: when it holds enough elements times operations
(:data:`MIN_WORK`) or numpy calls (:data:`MIN_CALLS`), and two ops or more, or one op whose numpy kernel is several passes
(sigmoid, erf, erfc); one exp, log or tanh alone stays on numpy where numpy has its
AVX-512 loops for them, which are as fast as this module's or faster, and fuses where it
has not (an AVX2 machine: 0.35-0.6x numpy's time; see :func:`_pays` for the figures). A group
that numba cannot compile stays on numpy. ``config.log_compiles`` says what compiled, what
came from the disk cache and what stayed on numpy, and why.

References:
    S. L. Moshier, Cephes Mathematical Library (``expf.c``, ``exp.c``, ``logf.c``,
    ``log.c``, ``tanhf.c``, ``tanh.c``), 1984-2000: the range reductions and coefficients.
    J.-M. Muller, *Elementary Functions: Algorithms and Implementation*, 3rd ed., 2016,
    ch. 11 (additive range reduction, Cody and Waite's split constant).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad._config import config
from fgrad.core.graph import Graph, Var
from fgrad.transforms import cpu_compile, fusion, numba_threads

__all__ = [
    "MIN_CALLS",
    "MIN_WORK",
    "PARALLEL_SIZE",
    "fuse_numpy",
    "numba_kernel",
    "render_numba",
    "render_rows",
    "row_kernel",
]

_log = logging.getLogger("fgrad")

MIN_WORK = 1 << 15
"""The fewest ``elements x operations`` for which a fused kernel beats numpy's calls; a
group below it stays on numpy. Measured on float32: a kernel call costs about 3 us before
its loop, a numpy ufunc with ``out=`` about 0.6 us, and two ufuncs over 64 x 256 elements
take as long as their fused kernel (5 us)."""

MIN_CALLS = 6
"""The fewest numpy calls (an op each; :data:`_PAYS_ALONE`'s ops count as this many) for
which a group fuses below :data:`MIN_WORK` too. A kernel call costs 4-6 us before its
loop (the numba dispatch and the arguments' views) and a numpy call on a small array
1-5 us (the more inside a large program, whose arrays have left the cache), so from
about five calls on the kernel wins whatever the size; below that, the compile (0.1-0.5
s a group) would not pay back soon. A language model's decode step is made of such
groups: its RMSNorms (7 calls on one row of 576 values) and its SwiGLU gate (a sigmoid
and two products)."""

PARALLEL_SIZE = 1 << 19
"""The fewest elements (of a group's shape) for which a group also gets a parallel kernel
(numba's threads); ``numba_threads.run`` then runs whichever loop has been faster lately,
where no other thread is inside a parallel kernel. Measured on the shared
2-core machine, parallel over serial loop, interleaved: with the other core idle 0.5-0.8
from (64, 1024) float32 up (GELU, layer-norm's groups); with another process busy on it,
a parallel loop waits for its descheduled thread: 1.1-1.6x for (4096, 1024), and 2-40x
at (1024, 1024), where a serial loop takes 0.1-1.5 ms. Compiling the parallel loop
costs about 0.8 s more than the serial one (cold cache), so small groups do without."""

_F32, _F64, _BOOL = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_)
_OWN_MATH = frozenset({"exp", "log", "tanh"})  # _math_functions' (the rest: numba's)


class _Unsupported(Exception):
    """The group holds something this emitter does not render (the message says what)."""


# ------------------------------------------------------------------------ the math


@functools.cache
def _math_functions() -> dict:
    """The vectorisable ``exp``, ``log``, ``tanh`` for float32 and float64, as numba
    functions ``{("exp", np.float32): f, ...}`` (made on first use: they import numba)."""
    import numba
    from numba import types
    from numba.extending import intrinsic

    from llvmlite import ir

    def float_ops(fty: Any, bits: int, mant: int, bias: int, shift: int) -> tuple:
        """Intrinsics on a float type's bits, in integers of its width (so the loop
        vectorises with one integer lane per float lane): ``scale(p, kf)`` is
        ``p * 2**n`` for ``kf = n + shift`` (n from ``kf``'s low mantissa bits), in two
        halves; ``exponent(x)`` is ``x``'s biased exponent minus ``bias - 1`` as a float,
        ``mantissa(x)`` its mantissa in ``[0.5, 1)``."""
        ity = ir.IntType(bits)
        shift_bits = int(np.array(shift, dtype=np.dtype(f"f{bits // 8}")).view(f"i{bits // 8}"))

        @intrinsic
        def scale(typingctx, p, kf):  # noqa: ARG001
            if p != fty or kf != fty:
                return None

            def codegen(context, builder, sig, args):
                n = builder.sub(builder.bitcast(args[1], ity), ir.Constant(ity, shift_bits))
                n1 = builder.ashr(n, ir.Constant(ity, 1))
                out = args[0]
                for half in (n1, builder.sub(n, n1)):
                    e = builder.add(half, ir.Constant(ity, bias))
                    e = builder.shl(e, ir.Constant(ity, mant))
                    out = builder.fmul(out, builder.bitcast(e, out.type))
                return out

            return fty(fty, fty), codegen

        @intrinsic
        def exponent(typingctx, x):  # noqa: ARG001
            if x != fty:
                return None

            def codegen(context, builder, sig, args):
                b = builder.lshr(builder.bitcast(args[0], ity), ir.Constant(ity, mant))
                b = builder.and_(b, ir.Constant(ity, (1 << (bits - 1 - mant)) - 1))
                b = builder.sub(b, ir.Constant(ity, bias - 1))
                return builder.sitofp(b, args[0].type)

            return fty(fty), codegen

        @intrinsic
        def mantissa(typingctx, x):  # noqa: ARG001
            if x != fty:
                return None

            def codegen(context, builder, sig, args):
                b = builder.and_(builder.bitcast(args[0], ity), ir.Constant(ity, (1 << mant) - 1))
                b = builder.or_(b, ir.Constant(ity, (bias - 1) << mant))
                return builder.bitcast(b, args[0].type)

            return fty(fty), codegen

        return scale, exponent, mantissa

    scale32, exponent32, mantissa32 = float_ops(types.float32, 32, 23, 127, 12582912.0)
    scale64, exponent64, mantissa64 = float_ops(types.float64, 64, 52, 1023, 6755399441055744.0)
    # Inlined in numba's IR where they are called: LLVM does not inline a call into
    # another compiled numba function, and a loop holding a call does not vectorise.
    jit = numba.njit(inline="always", error_model="numpy")
    f4, f8 = np.float32, np.float64

    @jit
    def exp32(x):
        # Cephes expf: x = n ln2 + r (Cody-Waite, ln2 in two parts), |r| <= ln2 / 2,
        # exp(r) by a degree-6 polynomial; 2**n in two halves (so no step leaves the
        # normal range before the last product, which rounds subnormals once).
        xc = x if x < f4(89.0) else f4(89.0)  # NaN -> 89, restored below
        xc = xc if xc > f4(-104.0) else f4(-104.0)
        kb = xc * f4(1.44269504088896341) + f4(12582912.0)  # round to nearest: 1.5 * 2**23
        kf = kb - f4(12582912.0)
        r = xc - kf * f4(0.693359375)
        r = r - kf * f4(-2.12194440e-4)
        z = r * r
        p = f4(1.9875691500e-4)
        p = p * r + f4(1.3981999507e-3)
        p = p * r + f4(8.3334519073e-3)
        p = p * r + f4(4.1665795894e-2)
        p = p * r + f4(1.6666665459e-1)
        p = p * r + f4(5.0000001201e-1)
        p = p * z + r + f4(1.0)
        y = scale32(p, kb)
        return y if x == x else x

    @jit
    def exp64(x):
        # Cephes exp: the same reduction, exp(r) = 1 + 2 r P(r^2) / (Q(r^2) - r P(r^2)).
        xc = x if x < 710.0 else 710.0
        xc = xc if xc > -746.0 else -746.0
        kb = xc * 1.4426950408889634073599 + 6755399441055744.0  # 1.5 * 2**52
        kf = kb - 6755399441055744.0
        r = xc - kf * 6.93145751953125e-1
        r = r - kf * 1.42860682030941723212e-6
        z = r * r
        p = 1.26177193074810590878e-4 * z + 3.02994407707441961300e-2
        p = (p * z + 9.99999999999999999910e-1) * r
        q = 3.00198505138664455042e-6 * z + 2.52448340349684104192e-3
        q = (q * z + 2.27265548208155028766e-1) * z
        q = q + 2.00000000000000000009e0
        y = scale64(1.0 + 2.0 * (p / (q - p)), kb)
        return y if x == x else x

    @jit
    def log32(x):
        # Cephes logf: x = 2**e m, m in [sqrt(1/2), sqrt(2)), log(m) = t - t^2/2 + t^3 P(t)
        # (t = m - 1), plus e ln2 in two parts. Subnormals are scaled by 2**25 first.
        tiny = x < f4(1.17549435e-38)
        xs = x * f4(33554432.0) if tiny else x
        e = exponent32(xs) - (f4(25.0) if tiny else f4(0.0))
        m = mantissa32(xs)  # [0.5, 1)
        low = m < f4(0.707106781186547524)
        e = e - f4(1.0) if low else e
        t = (m + m - f4(1.0)) if low else (m - f4(1.0))
        z = t * t
        y = f4(7.0376836292e-2)
        y = y * t + f4(-1.1514610310e-1)
        y = y * t + f4(1.1676998740e-1)
        y = y * t + f4(-1.2420140846e-1)
        y = y * t + f4(1.4249322787e-1)
        y = y * t + f4(-1.6668057665e-1)
        y = y * t + f4(2.0000714765e-1)
        y = y * t + f4(-2.4999993993e-1)
        y = y * t + f4(3.3333331174e-1)
        y = y * t * z
        y = y + e * f4(-2.12194440e-4)
        y = y - f4(0.5) * z
        y = t + y + e * f4(0.693359375)
        y = y if x < f4(np.inf) else x  # inf; NaN falls through to the NaN below
        y = y if x != f4(0.0) else f4(-np.inf)
        return y if x >= f4(0.0) else f4(np.nan)

    @jit
    def log64(x):
        # Cephes log: as logf, log(1 + t) = t - t^2/2 + t^3 P(t) / Q(t) for every exponent.
        tiny = x < 2.2250738585072014e-308
        xs = x * 18014398509481984.0 if tiny else x  # 2**54
        e = exponent64(xs) - (54.0 if tiny else 0.0)
        m = mantissa64(xs)
        low = m < 0.70710678118654752440
        e = e - 1.0 if low else e
        t = (m + m - 1.0) if low else (m - 1.0)
        z = t * t
        p = 1.01875663804580931796e-4
        p = p * t + 4.97494994976747001425e-1
        p = p * t + 4.70579119878881725854e0
        p = p * t + 1.44989225341610930846e1
        p = p * t + 1.79368678507819816313e1
        p = p * t + 7.70838733755885391666e0
        q = t + 1.12873587189167450590e1
        q = q * t + 4.52279145837532221105e1
        q = q * t + 8.29875266912776603211e1
        q = q * t + 7.11544750618563894466e1
        q = q * t + 2.31251620126765340583e1
        y = t * (z * p / q)
        y = y - e * 2.121944400546905827679e-4
        y = y - 0.5 * z
        y = t + y + e * 0.693359375
        y = y if x < np.inf else x
        y = y if x != 0.0 else -np.inf
        return y if x >= 0.0 else np.nan

    @jit
    def tanh32(x):
        # Cephes tanhf: an odd polynomial below 0.625, else 1 - 2 / (exp(2|x|) + 1).
        a = abs(x)
        big = f4(1.0) - f4(2.0) / (exp32(a + a) + f4(1.0))
        big = -big if x < f4(0.0) else big
        z = x * x
        p = f4(-5.70498872745e-3)
        p = p * z + f4(2.06390887954e-2)
        p = p * z + f4(-5.37397155531e-2)
        p = p * z + f4(1.33314422036e-1)
        p = p * z + f4(-3.33332819422e-1)
        small = p * z * x + x
        small = small if a != f4(0.0) else x  # -0.0 stays -0.0
        return big if a >= f4(0.625) else small

    @jit
    def tanh64(x):
        # Cephes tanh: x + x^3 P(x^2) / Q(x^2) below 0.625, else as tanhf.
        a = abs(x)
        big = 1.0 - 2.0 / (exp64(a + a) + 1.0)
        big = -big if x < 0.0 else big
        s = x * x
        p = -9.64399179425052238628e-1 * s - 9.92877231001918586564e1
        p = p * s - 1.61468768441708447952e3
        q = (s + 1.12811678491632931402e2) * s + 2.23548839060100448583e3
        q = q * s + 4.84406305325125486048e3
        small = x + x * s * (p / q)
        small = small if a != 0.0 else x
        return big if a >= 0.625 else small

    return {
        ("exp", _F32): exp32, ("exp", _F64): exp64,
        ("log", _F32): log32, ("log", _F64): log64,
        ("tanh", _F32): tanh32, ("tanh", _F64): tanh64,
    }


@functools.cache
def _row_functions() -> dict:
    """The row reductions of :class:`fusion.RowReduceGroup` kernels for float32 and
    float64, as numba functions of a 1-D row ``{("sum", np.float32): f, ...}``.

    ``sum`` lets LLVM reassociate the additions (``fastmath={"reassoc"}`` in that
    function only), so it vectorises: on this machine a (4096, 1024) float32 array's
    rows took 0.3 ms, against 1.1 ms for ``np.add.reduce`` and 2.1 ms for numpy's own
    pairwise order written out here (numba does not run LLVM's SLP vectoriser, which
    numpy's C loop relies on). Its order is LLVM's: interleaved vector lanes, each
    summing every 64th element or so in turn, then combined; within a few ulp of
    numpy's pairwise sum for rows of like-signed terms, and exact in neither. ``max``
    and ``min`` are exact and propagate NaN as numpy's do; they reduce integer order keys
    of the floats (:func:`_order_keys`), which LLVM vectorises (0.7 ms for those rows
    against 1.4 ms for ``np.max``; a float select reduction stays scalar, 2.8 ms).
    -0.0 orders below +0.0 here, so a tie between zeros may return the other sign."""
    import numba

    from numba import types

    jit = numba.njit(error_model="numpy", nogil=True)
    made = {}
    for dtype, fty, bits in ((_F32, types.float32, 32), (_F64, types.float64, 64)):
        made.update(_sums(jit, dtype.type))
        key, unkey = _order_keys(fty, bits)
        made[("max", dtype)] = _extremum(jit, key, unkey, dtype.type, True)
        made[("min", dtype)] = _extremum(jit, key, unkey, dtype.type, False)
    return made


def _order_keys(fty: Any, bits: int) -> tuple:
    """Intrinsics mapping a float to a signed integer of its width that orders as the
    floats do (NaN aside; -0.0 just below +0.0), and back: the bits, with every bit but
    the sign flipped where the sign is set. An integer max or min reduction
    vectorises without assumptions about NaN, a float one does not."""
    from numba import types
    from numba.extending import intrinsic

    from llvmlite import ir

    ity, nty = ir.IntType(bits), getattr(types, f"int{bits}")

    def flip(builder: Any, i: Any) -> Any:
        sign = builder.ashr(i, ir.Constant(ity, bits - 1))
        return builder.xor(i, builder.and_(sign, ir.Constant(ity, (1 << (bits - 1)) - 1)))

    @intrinsic
    def key(typingctx, x):  # noqa: ARG001
        if x != fty:
            return None

        def codegen(context, builder, sig, args):
            return flip(builder, builder.bitcast(args[0], ity))

        return nty(fty), codegen

    @intrinsic
    def unkey(typingctx, k):  # noqa: ARG001
        if k != nty:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(flip(builder, args[0]), context.get_value_type(fty))

        return fty(nty), codegen

    return key, unkey


def _sums(jit: Callable, cast: Callable) -> dict:
    """The sum of a row of dtype ``cast`` (a closure constant, so that numba types every
    partial sum in it), with LLVM free to reassociate it (and so to vectorise it)."""
    import numba

    @numba.njit(error_model="numpy", nogil=True, fastmath={"reassoc"})
    def row_sum(b):
        s = cast(0.0)  # numpy's start: a row of -0.0 sums to +0.0
        for i in range(b.shape[0]):
            s += b[i]
        return s

    return {("sum", np.dtype(cast)): row_sum}


def _extremum(jit: Callable, key: Any, unkey: Any, cast: Callable, largest: bool) -> Callable:
    """A row's max (``largest``) or min: the extreme order key, or NaN where the row
    holds one (numpy's rule)."""
    nan = cast(np.nan)

    if largest:
        def reduce(b):
            best = key(b[0])
            seen = False
            for i in range(b.shape[0]):
                v = b[i]
                k = key(v)
                best = k if k > best else best
                seen |= v != v
            return nan if seen else unkey(best)
    else:
        def reduce(b):
            best = key(b[0])
            seen = False
            for i in range(b.shape[0]):
                v = b[i]
                k = key(v)
                best = k if k < best else best
                seen |= v != v
            return nan if seen else unkey(best)

    return jit(reduce)


# ------------------------------------------------------------------------ rendering
# How one input is read: over (rows, cols), the cols, the rows, or one value.
_BOTH, _COLS, _ROWS, _ONE = "both", "cols", "rows", "one"


def _split(out: tuple, shapes: list) -> tuple[int, list] | None:
    """The axis ``k`` at which ``out`` splits into rows ``out[:k]`` and columns
    ``out[k:]`` with each input (of ``shapes``) varying over all or none of each part,
    and each input's pattern; None when no split serves every input. The last axis
    alone is tried first (the longest rows that still let a bias or a per-row value
    be read as a vector), then longer column parts."""
    n = len(out)
    for k in (*range(n - 1, -1, -1), n):
        kinds = []
        for shape in shapes:
            full = (1,) * (n - len(shape)) + tuple(shape)
            parts = []
            for lo, hi in ((0, k), (k, n)):
                axes = [d for d in range(lo, hi) if out[d] != 1]
                varies = {full[d] == out[d] for d in axes}
                if len(varies) > 1:
                    break
                parts.append(varies.pop() if varies else False)
            else:
                kinds.append({(True, True): _BOTH, (False, True): _COLS,
                              (True, False): _ROWS, (False, False): _ONE}[tuple(parts)])
                continue
            break
        else:
            return k, kinds
    return None


def _np_name(fn: Callable) -> str:
    return f"np.{fn.__name__}"


class _Emitter:
    """numba source for one group's steps: SSA lines and hoisted constants, named with
    ``prefix`` (so that several groups share one kernel); ``("in", i)`` reads
    ``inputs[i]`` (default ``x{i}``)."""

    def __init__(self, group: fusion.ElementwiseGroup, prefix: str = "", inputs: list | None = None):
        self.group = group
        self.prefix = prefix
        self.inputs = inputs if inputs is not None else [f"x{i}" for i in range(len(group.inputs))]
        self.consts: dict[tuple, str] = {}
        self.const_lines: list[str] = []
        self.lines: list[str] = []
        self.uses: set = set()  # math functions called

    def const(self, value: Any, dtype: np.dtype) -> str:
        key = (repr(value), dtype.name)
        if key not in self.consts:
            if dtype == _BOOL:
                text = repr(bool(value))
            else:
                v = float(value)
                text = repr(v) if np.isfinite(v) else f"np.{'nan' if v != v else 'inf'}"
                text = f"-{text}" if v == -np.inf else text
                text = f"np.{dtype.name}({text})"
            self.consts[key] = f"{self.prefix}K{len(self.consts)}"
            self.const_lines.append(f"{self.consts[key]} = {text}")
        return self.consts[key]

    def steps(self) -> list[str]:
        """The lines computing every step (``{prefix}v{j}``); ValueError where a step has
        no rendering."""
        types = {("in", i): _in_dtype(x) for i, x in enumerate(self.group.inputs)}
        try:
            for j, (dtype, e) in enumerate(self.group.steps):
                name, have = self.expr(e, types)
                wrap = name if have == dtype else (
                    f"{name} != {self.const(0.0, have)}" if dtype == _BOOL
                    else f"np.{dtype.name}({name})"
                )
                self.lines.append(f"{self.prefix}v{j} = {wrap}")
                types[("val", j)] = dtype
        except (KeyError, _Unsupported) as err:
            raise ValueError(f"render_numba: no numba rendering for {err}") from None
        return self.lines

    def header(self) -> list[str]:
        """The lines naming the math functions the steps call."""
        return [
            f"{fn}_{dtype.name} = _math[({fn!r}, np.dtype({dtype.name!r}))]"
            for fn, dtype in sorted(self.uses, key=str)
        ]

    def temp(self, text: str) -> str:
        name = f"{self.prefix}t{len(self.lines)}"
        self.lines.append(f"{name} = {text}")
        return name

    def expr(self, e: tuple, types: dict) -> tuple[str, np.dtype]:
        """``e`` as a name (its lines appended) and its dtype."""
        tag = e[0]
        if tag == "in":
            return self.inputs[e[1]], types[("in", e[1])]
        if tag == "val":
            return f"{self.prefix}v{e[1]}", types[("val", e[1])]
        if tag == "const":
            return self.const(e[1], e[2]), e[2]
        args = [self.expr(a, types) for a in e[1:] if isinstance(a, tuple)]
        names = [a for a, _ in args]
        dtype = self.group.dtype
        if tag == "neg":
            return self.temp(f"-{names[0]}"), args[0][1]
        if tag == "bin":
            return self.temp(f"{names[0]} {e[1]} {names[1]}"), args[0][1]
        if tag == "cmp":
            return self.temp(f"{names[0]} {e[1]} {names[1]}"), _BOOL
        if tag in ("and", "or", "xor"):
            op = {"and": "&", "or": "|", "xor": "^"}[tag]
            return self.temp(f"{names[0]} {op} {names[1]}"), _BOOL
        if tag == "not":
            return self.temp(f"not {names[0]}"), _BOOL
        if tag == "select":
            return self.temp(f"{names[1]} if {names[0]} else {names[2]}"), args[1][1]
        if tag == "cast":
            target, have = e[2], args[0][1]
            if target == have:
                return names[0], have
            if target == _BOOL:
                return self.temp(f"{names[0]} != {self.const(0.0, have)}"), _BOOL
            return self.temp(f"np.{target.name}({names[0]})"), target
        if tag == "call":
            return self._call(e[1], names, dtype)
        raise _Unsupported(f"the expression {tag!r}")

    def _call(self, fn: str, names: list, dtype: np.dtype) -> tuple[str, np.dtype]:
        joined = ", ".join(names)
        if fn in ("isnan", "isinf", "isfinite"):
            return self.temp(f"np.{fn}({joined})"), _BOOL
        if fn in _OWN_MATH:
            self.uses.add((fn, dtype))
            return self.temp(f"{fn}_{dtype.name}({joined})"), dtype
        if fn == "fabs":
            return self.temp(f"abs({joined})"), dtype
        if fn in ("erf", "erfc"):
            return self.temp(f"np.{dtype.name}(math.{fn}({joined}))"), dtype
        if fn == "pow":
            return self.temp(f"np.power({joined})"), dtype
        return self.temp(f"np.{dtype.name}({_np_name(fusion._FUNCTIONS[fn][2])}({joined}))"), dtype


def render_numba(
    group: fusion.ElementwiseGroup, input_shapes: list | None = None
) -> tuple[str, list]:
    """The group as the source of a numba loop ``_kernel(in0, ..., out0, ...)``.

    The loop runs over the output seen as ``(rows, cols)``; each input is read over both
    (``(rows, cols)``), the columns (``(cols,)``), the rows (``(rows,)``) or once
    (``(1,)``), its pattern.

    Args:
        group: a ``fusion.ElementwiseGroup``.
        input_shapes: the shape of each input as the kernel gets it (default: the
            inputs' avals, or constants' shapes).

    Returns:
        ``(source, patterns)``: the Python source of ``_kernel`` (after the lines that
        name the math functions it calls) and, for each input, its pattern with the axis
        ``k`` where rows end and columns begin: ``(kind, k)``.

    Raises:
        ValueError: when the inputs' broadcasts do not split into rows and columns, or an
            expression has no rendering.

    Example:
        >>> from fgrad.transforms.fusion import elementwise_groups
        >>> from fgrad.transforms.fusion_numba import render_numba
        >>> g = fgrad.make_graph(lambda x, b: fnp.tanh(x + b))(
        ...     fnp.ones((2, 3), dtype="float32"), fnp.ones(3, dtype="float32"))
        >>> source, patterns = render_numba(elementwise_groups(g)[0])
        >>> patterns
        [('both', 1), ('cols', 1)]
        >>> print(source.splitlines()[0])
        tanh_float32 = _math[('tanh', np.dtype('float32'))]
        >>> print(source.splitlines()[1])
        def _kernel(in0, in1, out0, nsplit):
    """
    shapes = input_shapes if input_shapes is not None else [_shape_of(x) for x in group.inputs]
    split = _split(tuple(group.shape), shapes)
    if split is None:
        raise ValueError(
            f"render_numba: inputs of shapes {shapes} do not broadcast to {tuple(group.shape)} "
            "as rows and columns; the group runs as numpy calls"
        )
    k, kinds = split
    em = _Emitter(group)
    body = em.steps()
    n_in, n_out = len(group.inputs), len(group.outputs)
    params = [f"in{i}" for i in range(n_in)] + [f"out{j}" for j in range(n_out)]
    consts = em.const_lines
    src = [f"def _kernel({', '.join(params)}, nsplit):", "    rows, cols = out0.shape"]
    src.append("    step = -(-cols // nsplit)")
    src += [f"    {line}" for line in consts]
    src += [f"    x{i} = in{i}[0]" for i, kind in enumerate(kinds) if kind == _ONE]
    # task t: row t // nsplit, its (t % nsplit)-th column chunk (all of it when nsplit = 1),
    # read through slices so that the loop's index starts at 0: numba then drops the
    # negative-index wraparound that keeps LLVM from vectorising the loop
    src.append("    for t in numba.prange(rows * nsplit):")
    src.append("        r = t // nsplit")
    src.append("        lo = (t - r * nsplit) * step")
    src.append("        hi = min(lo + step, cols)")
    src += [f"        x{i} = in{i}[r]" for i, kind in enumerate(kinds) if kind == _ROWS]
    src += [f"        a{i} = in{i}[r, lo:hi]" for i, kind in enumerate(kinds) if kind == _BOTH]
    src += [f"        a{i} = in{i}[lo:hi]" for i, kind in enumerate(kinds) if kind == _COLS]
    src += [f"        o{j} = out{j}[r, lo:hi]" for j in range(n_out)]
    src.append("        for c in range(max(hi - lo, 0)):")
    src += [f"            x{i} = a{i}[c]" for i, kind in enumerate(kinds) if kind in (_BOTH, _COLS)]
    src += [f"            {line}" for line in body]
    for j, result in enumerate(group.results):
        src.append(f"            o{j}[c] = v{result[1]}")
    return "\n".join(em.header() + src) + "\n", [(kind, k) for kind in kinds]


_in_dtype = fusion._input_dtype


# How a row kernel reads an input: as rows of shape (rows, cols), a vector (its cols
# or its rows, by where it is read), or one value.
_VEC = "vec"


def _row_view(x: Any, group: fusion.RowReduceGroup) -> str:
    shape = _shape_of(x)
    if int(np.prod(shape, dtype=np.int64)) == 1:
        return _ONE
    full = (1,) * (len(group.shape) - len(shape)) + shape
    return _BOTH if full == tuple(group.shape) else _VEC


def _row_reads(x: Any, where: str, group: fusion.RowReduceGroup) -> str:
    """How a part of ``where`` reads input ``x``: ``_BOTH``, ``_COLS``, ``_ROWS``, ``_ONE``."""
    view = _row_view(x, group)
    if view != _VEC:
        return view
    shape = _shape_of(x)
    if where == fusion.ROW and len(shape) >= 1 and shape[-1] == group.shape[-1] and (
        int(np.prod(shape, dtype=np.int64)) == group.shape[-1]
    ):
        return _COLS
    return _ROWS


def render_rows(group: fusion.RowReduceGroup) -> str:
    """The group as the source of a numba kernel ``_kernel(in0, ..., out0, ..., rows,
    cols, nsplit)`` over rows of ``cols`` elements.

    Each row runs the group's parts level by level: the per-row parts whose inputs are
    ready, then one loop over the row computing the row parts of that level (values a
    later level or a reduction reads are kept in a row buffer, or the output's row),
    then the reductions of that level over their rows. Inputs are read as rows
    ``(rows, cols)``, vectors ``(size,)`` (a bias over the columns, a per-row value) or
    one value ``(1,)``; row outputs are written as ``(rows, cols)``, per-row ones as
    ``(rows,)``. ``nsplit`` chunks of rows run as the ``prange``'s tasks.

    Args:
        group: a ``fusion.RowReduceGroup``.

    Returns:
        The Python source (after the lines naming the functions it calls).

    Raises:
        ValueError: when an expression has no numba rendering.

    Example:
        >>> from fgrad.transforms.fusion import row_reduce_groups
        >>> from fgrad.transforms.fusion_numba import render_rows
        >>> def softmax(x):
        ...     e = fnp.exp(x - fnp.max(x, axis=-1, keepdims=True))
        ...     return e / fnp.sum(e, axis=-1, keepdims=True)
        >>> (g,) = row_reduce_groups(fgrad.make_graph(softmax)(fnp.ones((4, 8), dtype="float32")))
        >>> print(render_rows(g).splitlines()[3])
        def _kernel(in0, out0, rows, cols, nsplit):
    """
    ext = {id(x): e for e, x in enumerate(group.inputs)}
    out_index = {id(v): j for j, v in enumerate(group.outputs)}
    info: dict[int, dict] = {}  # id(Var) -> where, name, level, and buf (a row it is kept in)
    levels, emitters, headers = [], [], []
    for i, part in enumerate(group.parts):
        if part[0] == "map":
            g, where = part[1], part[2]
            ins = [x for x in g.inputs if isinstance(x, Var) and id(x) in info]
            level = max([info[id(x)]["level"] for x in ins] or [0])
            for v, result in zip(g.outputs, g.results):
                info[id(v)] = {"where": where, "name": f"p{i}_v{result[1]}", "level": level}
        else:
            node = part[1]
            x = node.inputs[0]
            level = info[id(x)]["level"] if id(x) in info else 0
            info[id(node.outputs[0])] = {"where": "reduced", "name": f"s{i}", "level": level + 1}
        levels.append(level)
    # row values read in a later level or by a reduction, or returned, are kept in a row
    kept_rows = {id(v) for v in group.outputs if info[id(v)]["where"] == fusion.ROW}
    for i, part in enumerate(group.parts):
        reads = part[1].inputs if part[0] == "map" else part[1].inputs[:1]
        for x in reads:
            if isinstance(x, Var) and id(x) in info and info[id(x)]["where"] == fusion.ROW and (
                part[0] == "reduce" or levels[i] > info[id(x)]["level"]
            ):
                kept_rows.add(id(x))
    scratch = []
    for vid in sorted(kept_rows, key=lambda v: info[v]["name"]):
        if vid in out_index:
            info[vid]["buf"] = f"o{out_index[vid]}"
        else:
            info[vid]["buf"] = f"b{len(scratch)}"
            scratch.append(vid)
    views = {id(x): _row_view(x, group) for x in group.inputs}
    dtype = group.dtype.name
    body: dict[int, list] = {}  # level -> lines of the row's scalar parts, loop, reductions
    consts: list[str] = []
    uses: set = set()
    top = max(levels) + 1 if levels else 0
    for level in range(top + 1):
        lines: list[str] = []
        for i, part in enumerate(group.parts):  # per-row parts of this level
            if part[0] == "map" and part[2] != fusion.ROW and levels[i] == level:
                lines += _emit_part(i, part, info, ext, group, consts, uses, level, None)
        loop: list[str] = []
        reads: dict[str, str] = {}
        stores: list[str] = []
        for i, part in enumerate(group.parts):
            if part[0] == "map" and part[2] == fusion.ROW and levels[i] == level:
                loop += _emit_part(i, part, info, ext, group, consts, uses, level, reads)
                for v in part[1].outputs:
                    if "buf" in info[id(v)]:
                        stores.append(f"{info[id(v)]['buf']}[c] = {info[id(v)]['name']}")
        if loop:
            lines.append("for c in range(cols):")
            lines += [f"    {name} = {ref}" for name, ref in reads.items()]
            lines += [f"    {line}" for line in loop + stores]
        for i, part in enumerate(group.parts):
            if part[0] == "reduce" and levels[i] == level:
                node = part[1]
                x = node.inputs[0]
                row = info[id(x)]["buf"] if id(x) in info else f"a{ext[id(x)]}"
                uses.add((node.op.name, dtype))
                lines.append(f"s{i} = row_{node.op.name}_{dtype}({row})")
        body[level] = lines
    n_in, n_out = len(group.inputs), len(group.outputs)
    params = [f"in{e}" for e in range(n_in)] + [f"out{j}" for j in range(n_out)]
    src = [f"def _kernel({', '.join(params)}, rows, cols, nsplit):"]
    src.append("    step = -(-rows // nsplit)")
    src += [f"    {line}" for line in consts]
    src += [f"    x{e} = in{e}[0]" for e in range(n_in) if views[id(group.inputs[e])] == _ONE]
    src.append("    for t in numba.prange(nsplit):")
    src += [f"        b{k} = np.empty(cols, np.{dtype})" for k in range(len(scratch))]
    src.append("        for r in range(t * step, min(t * step + step, rows)):")
    src += [f"            a{e} = in{e}[r]" for e in range(n_in) if views[id(group.inputs[e])] == _BOTH]
    src += [f"            x{e} = in{e}[r]" for e in range(n_in) if views[id(group.inputs[e])] == _VEC
            and any(_row_reads(group.inputs[e], p[2], group) == _ROWS
                    for p in group.parts if p[0] == "map" and any(x is group.inputs[e] for x in p[1].inputs))]
    src += [f"            o{j} = out{j}[r]" for j, v in enumerate(group.outputs)
            if info[id(v)]["where"] == fusion.ROW]
    for level in range(top + 1):
        src += [f"            {line}" for line in body[level]]
    src += [f"            out{j}[r] = {info[id(v)]['name']}" for j, v in enumerate(group.outputs)
            if info[id(v)]["where"] != fusion.ROW]
    header = [f"{fn}_{dt} = _math[({fn!r}, np.dtype({dt!r}))]" for fn, dt in sorted(uses)
              if fn in _OWN_MATH]
    header += [f"row_{fn}_{dt} = _rows[({fn!r}, np.dtype({dt!r}))]" for fn, dt in sorted(uses)
               if fn in ("sum", "max", "min")]
    return "\n".join(header + src) + "\n"


def _emit_part(i: int, part: tuple, info: dict, ext: dict, group: Any, consts: list,
               uses: set, level: int, reads: dict | None) -> list[str]:
    """The lines of elementwise part ``i``: per row (``reads`` None) or per element of
    the row loop (``reads`` collects the loads at the top of the loop)."""
    g, where = part[1], part[2]
    names = []
    for x in g.inputs:
        if isinstance(x, Var) and id(x) in info:
            v = info[id(x)]
            if reads is not None and v["where"] == fusion.ROW and v["level"] < level:
                names.append(f"w_{v['buf']}")  # kept in a row by an earlier level
                reads[names[-1]] = f"{v['buf']}[c]"
            else:
                names.append(v["name"])
            continue
        e = ext[id(x)]
        how = _row_reads(x, where, group)
        if how == _BOTH:
            names.append(f"e{e}")
            reads[f"e{e}"] = f"a{e}[c]"
        elif how == _COLS:
            names.append(f"f{e}")
            reads[f"f{e}"] = f"in{e}[c]"
        else:  # one value, or this row's
            names.append(f"x{e}")
    em = _Emitter(g, prefix=f"p{i}_", inputs=names)
    lines = em.steps()
    consts += em.const_lines
    uses.update((fn, dt.name) for fn, dt in em.uses)
    return lines


def _shape_of(x: Any) -> tuple:
    if isinstance(x, Var):
        return tuple(x.aval.shape)
    return tuple(np.shape(fusion._constant(x, None)))


# ------------------------------------------------------------------------ kernels


@functools.cache
def _math_digest() -> str:
    """A digest of this module: the generated kernels inline its math, so a change to it
    must not find the old compiled code in numba's disk cache."""
    with open(__file__, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


_MODULE_HEAD = (
    "import math\nimport numpy as np\nimport numba\n"
    "from fgrad.transforms.fusion_numba import _math_functions\n"
    "_math = _math_functions()\n"
)
_ROWS_HEAD = _MODULE_HEAD + (
    "from fgrad.transforms.fusion_numba import _row_functions\n_rows = _row_functions()\n"
)
_FLAGS = 'cache=True, nogil=True, error_model="numpy"'


def _compile(source: str, head: str = _MODULE_HEAD) -> tuple[Any, Any]:
    """The ``_kernel`` of ``source`` as two numba dispatchers, ``(serial, parallel)``: the
    same loop, its ``prange`` a plain range in the first and split over numba's threads in
    the second (each compiled on its first call, or loaded from numba's disk cache)."""
    names, _, func = source.partition("def _kernel(")
    text = f"# fgrad fused kernel, math {_math_digest()}\n{head}{names}\n\n"
    text += f"@numba.njit({_FLAGS})\ndef _kernel({func}\n\n"
    text += f"@numba.njit({_FLAGS}, parallel=True)\ndef _kernel_parallel({func}"
    module = cpu_compile.load_module(text, "fgrad_fused")
    return module._kernel, module._kernel_parallel


# Ops whose numpy kernel is several passes over memory (fgrad's sigmoid: exp, abs, where,
# a division; erf and erfc: Cody's rational approximations, dozens of ufuncs) and so fuse
# alone. Measured on 1e6 and 3e4 elements (the shared 2-core machine, one thread,
# interleaved): the fused loop takes 0.2-0.4x the numpy kernel's time for sigmoid and
# 0.1-0.3x for erf and erfc, float32 and float64.
_PAYS_ALONE = frozenset({"sigmoid", "erf", "erfc"})


def _numpy_has_avx512() -> bool:
    """Whether numpy dispatches to its AVX-512 (Skylake-X feature set) loops on this CPU,
    which include exp, log and tanh from Intel's SVML; True where numpy does not say."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return True
    return bool(features.get("AVX512_SKX", True))


@functools.cache
def _pays_alone() -> frozenset:
    """``_PAYS_ALONE``, and exp, log and tanh where numpy has no AVX-512 loops for them."""
    return _PAYS_ALONE if _numpy_has_avx512() else _PAYS_ALONE | _OWN_MATH


def _pays(group: fusion.ElementwiseGroup) -> str | None:
    """Why ``group`` should stay on numpy, or None when a fused kernel pays.

    A group pays when it holds at least :data:`MIN_WORK` elements x operations or
    :data:`MIN_CALLS` numpy calls, and either two ops or more, or one of
    :func:`_pays_alone`. One exp, log or tanh alone does not
    where numpy has its AVX-512 loops: on 1e6 float32 (the issue's target is 0.45x of
    ``np.exp``) the serial loop took 0.8-1.1x numpy's time for exp, 1.4-2.5x for log and
    1.7-2.8x for tanh (a Zen 4 machine, numpy's AVX-512 loops against LLVM's), and the
    parallel one no less than the serial one with another process on the second core
    (most of the time on the shared machine). Without them (a Zen 3 machine, AVX2; one
    thread, process time, best of 15) it pays: float32 exp 0.43x numpy's time, tanh 0.62x,
    log 0.55x; float64 0.39x, 0.35x and 0.58x, within 3 ulp of numpy."""
    names = [node.op.name for node in group.nodes]
    if len(names) == 1 and names[0] not in _pays_alone():
        return f"one {names[0]} alone is as fast in numpy"
    return _too_small(group, names)


def _too_small(group: Any, names: list) -> str | None:
    """Why a group of these ops is too small to fuse (:data:`MIN_WORK`,
    :data:`MIN_CALLS`), or None."""
    size = _size(group)
    calls = sum(MIN_CALLS if name in _PAYS_ALONE else 1 for name in names)
    if size * len(names) < MIN_WORK and calls < MIN_CALLS:
        return (f"{size} elements x {len(names)} ops is below MIN_WORK ({MIN_WORK}) and "
                f"{calls} numpy calls below MIN_CALLS ({MIN_CALLS})")
    return None


def _built(make: Callable, group: Any) -> tuple[Callable | None, str | None]:
    """``(kernel, None)``, or ``(None, why)`` where the group does not render (a
    ValueError) or numba cannot compile it."""
    try:
        return make(group), None
    except ValueError as err:
        return None, str(err)
    except Exception as err:  # noqa: BLE001  (numba's typing or lowering error)
        first = str(err).splitlines()[0] if str(err) else ""
        return None, f"numba could not compile it: {type(err).__name__}: {first}"


def numba_kernel(group: fusion.ElementwiseGroup) -> Callable | None:
    """The group as a kernel ``(xp, *inputs) -> outputs`` over a compiled numba loop, or
    None when it stays on numpy (it does not pay, or does not render or compile; with
    ``config.log_compiles`` the log says which and why).

    Args:
        group: a ``fusion.ElementwiseGroup`` of float32/float64 (and bool) values.

    Returns:
        A callable, or None.

    Example:
        >>> import pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.transforms.fusion import elementwise_groups
        >>> from fgrad.transforms.fusion_numba import numba_kernel
        >>> x = np.linspace(-2.0, 2.0, 1 << 16, dtype=np.float32)
        >>> g = fgrad.make_graph(lambda x: fnp.exp(x) * 2.0)(x)
        >>> kernel = numba_kernel(elementwise_groups(g)[0])
        >>> bool(np.allclose(kernel(np, x)[0], np.exp(x) * 2, rtol=1e-6))
        True
    """
    dtype = np.dtype(group.dtype).name if group.dtype else "bool"
    what = f"{[n.op.name for n in group.nodes]} {dtype}{list(group.shape)}"
    why = _pays(group)
    start = time.perf_counter()
    if why is None:
        run, why = _built(_make, group)
    if why is not None:
        # one small op left alone is not news: only groups, or large single ops
        if config.log_compiles and (len(group.nodes) > 1 or _size(group) >= MIN_WORK):
            _log.warning("jit: fused group %s runs as numpy calls: %s", what, why)
        return None
    if config.log_compiles:
        _log.warning("jit: fused group %s %s (%.2f s)", what, _how(run), time.perf_counter() - start)
    return run


def _how(run: Callable) -> str:
    """How a kernel came to be, for the log: compiled or loaded, serial or with threads."""
    kernels = [k for k in (run.dispatcher, run.parallel) if k is not None]
    hits = sum(sum(k.stats.cache_hits.values()) for k in kernels)
    how = "loaded from numba's disk cache" if hits else "compiled with numba"
    return how + (" (serial and parallel loops)" if run.parallel is not None else "")


def _make(group: fusion.ElementwiseGroup) -> Callable:
    """The group's kernel, whether or not it pays; raises ValueError where it does not
    render, numba's error where it does not compile. The parallel variant is compiled
    only for groups of at least :data:`PARALLEL_SIZE` elements, where numba has threads."""
    shapes = [_shape_of(x) for x in group.inputs]
    source, patterns = render_numba(group, shapes)
    serial, parallel = _compile(source)
    serial = _typed(serial, group, patterns)
    parallel = _typed(parallel, group, patterns) if _threads_pay(group) else None
    return _runner(serial, parallel, group, patterns)


def _size(group: Any) -> int:
    return int(np.prod(group.shape, dtype=np.int64))


def _threads_pay(group: Any) -> bool:
    import numba

    return numba.config.NUMBA_NUM_THREADS > 1 and _size(group) >= PARALLEL_SIZE


def _view_shape(kind: str, k: int, out: tuple) -> tuple:
    rows, cols = int(np.prod(out[:k], dtype=np.int64)), int(np.prod(out[k:], dtype=np.int64))
    return {_BOTH: (rows, cols), _COLS: (cols,), _ROWS: (rows,), _ONE: (1,)}[kind]


def _typed(kernel: Any, group: fusion.ElementwiseGroup, patterns: list) -> Any:
    """``kernel`` compiled (or loaded) for the group's dtypes, without running it (a
    parallel kernel runs only under ``numba_threads``' lock)."""
    out = tuple(group.shape)
    ins = [
        np.zeros((1,) if kind == _ONE else (0,) * len(_view_shape(kind, k, out)), _in_dtype(x))
        for x, (kind, k) in zip(group.inputs, patterns)
    ]
    outs = [np.zeros((0, 0), np.dtype(v.aval.dtype)) for v in group.outputs]
    return _compiled(kernel, [*ins, *outs, 1])


def _compiled(kernel: Any, args: list) -> Any:
    import numba

    kernel.compile(tuple(numba.typeof(a) for a in args))
    return kernel


def _splits(rows: int, threads: int) -> int:
    """Column chunks per row of a parallel loop: 1 where the rows alone give every thread
    a few tasks, else enough chunks for four tasks a thread."""
    return 1 if rows >= 4 * threads else -(-4 * threads // rows)


def _runner(serial: Any, parallel: Any, group: fusion.ElementwiseGroup, patterns: list) -> Callable:
    """``(xp, *inputs) -> outputs``: the inputs viewed as the loop reads them, fresh
    outputs; ``.dispatcher`` is the serial numba function (``inspect_asm`` shows its
    loop), ``.parallel`` the threaded one (None when the group is too small for threads)."""
    out = tuple(group.shape)
    k = patterns[0][1] if patterns else _split(out, [])[0]
    shape2 = _view_shape(_BOTH, k, out)
    views = [_view_shape(kind, k, out) for kind, k in patterns]
    dtypes = [np.dtype(v.aval.dtype) for v in group.outputs]
    in_dtypes = [_in_dtype(x) for x in group.inputs]
    choice = numba_threads.LoopChoice()
    rows = shape2[0]
    splits = functools.partial(_splits, rows)

    def run(xp: Any, *inputs: Any) -> tuple:
        args = [
            np.ascontiguousarray(a, dtype=dt).reshape(view)
            for a, dt, view in zip(inputs, in_dtypes, views)
        ]
        outs = tuple(np.empty(out, dtype) for dtype in dtypes)
        numba_threads.run(serial, parallel, (*args, *(o.reshape(shape2) for o in outs)), choice,
                          splits)
        return outs

    run.dispatcher = serial
    run.parallel = parallel
    run.choice = choice
    return run


def row_kernel(group: fusion.RowReduceGroup) -> Callable | None:
    """The group as a kernel ``(xp, *inputs) -> outputs`` over a compiled numba row loop
    (:func:`render_rows`), or None when it stays on numpy (too small, or it does not
    render or compile; with ``config.log_compiles`` the log says which and why): its
    elementwise parts then fuse as elementwise groups where they pay.

    Example:
        >>> import pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.transforms.fusion import row_reduce_groups
        >>> from fgrad.transforms.fusion_numba import row_kernel
        >>> x = np.linspace(-2.0, 2.0, 1 << 16, dtype=np.float32).reshape(256, 256)
        >>> g = fgrad.make_graph(lambda x: x - fnp.max(x, axis=-1, keepdims=True))(x)
        >>> (y,) = row_kernel(row_reduce_groups(g)[0])(np, x)
        >>> bool(np.array_equal(y, x - x.max(axis=-1, keepdims=True)))
        True
    """
    names = [n.op.name for n in group.nodes]
    what = f"{names} {group.dtype.name}{list(group.shape)}"
    why = _too_small(group, names)
    if why is None:
        start = time.perf_counter()
        run, why = _built(_make_rows, group)
    if why is not None:
        if config.log_compiles:
            _log.warning("jit: fused row group %s runs as numpy calls: %s", what, why)
        return None
    if config.log_compiles:
        _log.warning("jit: fused row group %s %s (%.2f s)", what, _how(run),
                     time.perf_counter() - start)
    return run


def _make_rows(group: fusion.RowReduceGroup) -> Callable:
    """The row group's kernel, whether or not it pays (ValueError where it does not
    render, numba's error where it does not compile)."""
    serial, parallel = _compile(render_rows(group), _ROWS_HEAD)
    rows, cols = int(np.prod(group.shape[:-1], dtype=np.int64)), int(group.shape[-1])
    views = [{_BOTH: (rows, cols), _ONE: (1,)}.get(_row_view(x, group), (_size_of(x),))
             for x in group.inputs]
    outs = [(rows, cols) if tuple(v.aval.shape) == tuple(group.shape) else (rows,)
            for v in group.outputs]
    dtypes = [np.dtype(v.aval.dtype) for v in group.outputs]
    in_dtypes = [_in_dtype(x) for x in group.inputs]
    empty = [np.zeros((1,) if len(v) == 1 and v[0] == 1 else (0,) * len(v), dt)
             for v, dt in zip(views, in_dtypes)]
    empty += [np.zeros((0,) * len(o), dt) for o, dt in zip(outs, dtypes)]
    serial = _compiled(serial, [*empty, 0, 0, 1])
    parallel = _compiled(parallel, [*empty, 0, 0, 1]) if _threads_pay(group) else None
    choice = numba_threads.LoopChoice()
    splits = functools.partial(_row_splits, rows)

    def run(xp: Any, *inputs: Any) -> tuple:
        args = [np.ascontiguousarray(a, dtype=dt).reshape(view)
                for a, dt, view in zip(inputs, in_dtypes, views)]
        results = tuple(np.empty(v.aval.shape, dt) for v, dt in zip(group.outputs, dtypes))
        numba_threads.run(serial, parallel,
                          (*args, *(o.reshape(s) for o, s in zip(results, outs)), rows, cols),
                          choice, splits)
        return results

    run.dispatcher, run.parallel, run.choice = serial, parallel, choice
    return run


def _row_splits(rows: int, threads: int) -> int:
    """Chunks of rows of a parallel row loop: four a thread (each allocates its rows'
    buffers once)."""
    return max(1, min(rows, 4 * threads))


def _size_of(x: Any) -> int:
    return int(np.prod(_shape_of(x), dtype=np.int64))


def fuse_numpy(graph: Graph) -> Graph:
    """``graph`` with each attention chain of a few queries
    (:func:`fgrad.transforms.fusion_attention.fuse_attention`), each row group
    (:func:`row_kernel`), then each elementwise group (:func:`numba_kernel`) of what is
    left, that pays run as one compiled numba kernel
    (what ``fusion.fuse_for`` returns for numpy when numba is installed and
    ``config.cpu_compile`` is on); groups that do not pay or compile stay as they are.

    Args:
        graph: a Graph (as ``jit`` runs it); it is not changed.

    Returns:
        A Graph with the same inputs and outputs, or ``graph`` when nothing fuses.

    Example:
        >>> from fgrad.transforms.fusion_numba import fuse_numpy
        >>> g = fgrad.make_graph(lambda x: fnp.sum(x * 2.0 + 1.0))(fnp.ones(3))
        >>> fuse_numpy(g) is g  # 3 elements: a kernel would not pay
        True
    """
    from fgrad.transforms.fusion_attention import fuse_attention

    graph = fuse_attention(graph)
    rows = fusion.row_reduce_groups(graph)
    if rows:
        graph = fusion.fuse_graph(graph, row_kernel, groups=rows)
    return fusion.fuse_graph(graph, numba_kernel, min_size=1)


def __dir__() -> list[str]:
    return list(__all__)
