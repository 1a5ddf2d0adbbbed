"""Random-number ops: Threefry-2x32-20 keys and the samplers behind :mod:`fgrad.random`.

Each op takes a ``(2,)`` uint32 key (JAX's raw key layout) as its first input and computes
through the array namespace ``xp`` only, so the same key gives the same bits on numpy, on
cupy and under ``array_api_strict``. Shapes and dtypes are static params, so every op has a
shape rule and ``jit`` records it with a traced key; keys, probabilities, logits and bounds
are inputs (data). The public functions with argument checks are in :mod:`fgrad.random`,
whose module docstring describes the counter layout (the stream tags below).

Every op also takes a batch of keys ``(*kb, 2)`` and returns one result per key,
``(*kb, ...)``, equal to calling it key by key: the keys are hashed together, since
Threefry is counter-based. That is what ``vmap`` over keys runs (``_key_batch``), e.g.
per-example dropout masks.

Only ``random_gamma`` has a derivative: in its concentration, the implicit
reparameterisation gradient (``random_gamma_grad``, whose own rules refuse: no second
derivatives). ``random_uniform`` and ``random_truncated_normal`` declare rules for their
bounds only to *refuse* them: a bound differentiated through a jitted sampler raises
TypeError instead of silently getting a zero derivative.

References:
    J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy as
    1, 2, 3", SC 2011 (Threefry). The JAX PRNG design note (jax/docs/jep/263-prng.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np  # dtype metadata and limits only; arrays go through xp

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import aligned, batch_size, elementwise_batch, with_batch
from fgrad.ops._rules import broadcasts_to, ndim_of, shape_of
from fgrad.ops.elementwise import multiply
from fgrad.ops.special import _digamma64, _gammaln64
from fgrad.tensor import ShapeDtype

__all__ = [
    "no_derivative_message",
    "random_bernoulli",
    "random_bits",
    "random_categorical",
    "random_fold_in",
    "random_normal",
    "random_permutation",
    "random_randint",
    "random_split",
    "random_truncated_normal",
    "random_uniform",
    "threefry2x32",
]

# Threefry-2x32 rotation constants R_{0..7} and the key-schedule parity constant
# (Salmon et al. 2011; Random123's threefry.h, whose known answers tests/test_random.py checks).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
_MASK32 = 0xFFFFFFFF
_TAG_BITS, _TAG_SPLIT, _TAG_FOLD, _TAG_SUB = 0, 1, 2, 3
_MAX_ROUNDS = 200  # rejection rounds; every sampler here accepts with probability >= 0.45

_UINT32 = np.dtype(np.uint32)
_EPS64 = 2.0**-53

# Random mantissa bits per float dtype: float64 takes them from 64-bit draws, others from 32.
MANTISSA = {np.dtype(np.float16): 10, np.dtype(np.float32): 23, np.dtype(np.float64): 52}


# --------------------------------------------------------------------------- Threefry core


def threefry2x32(xp: Any, k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32-20 of counters ``(x0, x1)`` under key ``(k0, k1)``; uint32 arrays.

    Keys have shape ``(1,)`` (1-d so that numpy never computes on scalars, which warn on
    wrap-around); counters have shape ``(n,)``. Returns two ``(n,)`` uint32 arrays.

    Example:
        >>> from fgrad.ops.random import threefry2x32
        >>> zero = np.zeros(1, np.uint32)
        >>> [hex(int(y[0])) for y in threefry2x32(np, zero, zero, zero, zero)]
        ['0x6b200159', '0x99ba4efe']
    """
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for i in range(5):  # 5 groups of 4 rounds, a key injection after each group
        for r in _ROTATIONS[i % 2]:
            x0 += x1
            x1 = (x1 << r) | (x1 >> (32 - r))
            x1 ^= x0
        x0 += ks[(i + 1) % 3]
        x1 += ks[(i + 2) % 3] + (i + 1)
    return x0, x1


def _counters(xp: Any, idx: Any, tag: int) -> tuple[Any, Any]:
    """The counter words ``(hi, lo)`` of flat indices ``idx`` (an int, meaning arange, or an
    int64 array) in the stream ``tag``."""
    if isinstance(idx, int) and idx <= 2**32:
        lo = xp.arange(idx, dtype=xp.uint32)
        return xp.full((idx,), tag << 30, dtype=xp.uint32), lo
    if isinstance(idx, int):
        idx = xp.arange(idx, dtype=xp.int64)
    hi = xp.astype(idx >> 32, xp.uint32) | (tag << 30)
    return hi, xp.astype(idx & _MASK32, xp.uint32)


def _hash(xp: Any, kd: Any, idx: Any, tag: int) -> tuple[Any, Any]:
    """Threefry blocks of stream ``tag`` under the ``(K, 2)`` key data ``kd``.

    ``idx`` an int ``n``: blocks ``0..n-1`` of every key, two ``(K, n)`` arrays. ``idx`` a
    pair ``(rows, cols)`` of int64 arrays: block ``cols[j]`` of key ``rows[j]``, two ``(m,)``
    arrays (rejection rounds redraw scattered elements of a batch of keys).
    """
    if isinstance(idx, int):
        return threefry2x32(xp, kd[:, 0:1], kd[:, 1:2], *_counters(xp, idx, tag))
    rows, cols = idx
    k = xp.take(kd, rows, axis=0)
    return threefry2x32(xp, k[:, 0], k[:, 1], *_counters(xp, cols, tag))


def _block(xp: Any, kd: Any, hi: int, lo: Any) -> Any:
    """The ``(K, 2)`` blocks of ``kd`` at counter ``(hi, lo)``: derived keys (``lo`` an int,
    or a ``(K, 1)`` uint32 array, one counter per key)."""
    if isinstance(lo, int):
        lo = xp.asarray([lo], dtype=xp.uint32)
    y0, y1 = threefry2x32(xp, kd[:, 0:1], kd[:, 1:2], xp.asarray([hi], dtype=xp.uint32), lo)
    return xp.concat([y0, y1], axis=1)


def _subkey(xp: Any, kd: Any, j: int) -> Any:
    """Key data of sub-stream ``j`` of ``kd`` (for samplers that need several streams)."""
    return _block(xp, kd, _TAG_SUB << 30, j)


def _bits32(xp: Any, kd: Any, n: int) -> Any:
    """``(K, n)`` random uint32 words: element ``i`` is word ``i % 2`` of block ``i // 2``."""
    y0, y1 = _hash(xp, kd, (n + 1) // 2, _TAG_BITS)
    return xp.reshape(xp.stack([y0, y1], axis=2), (kd.shape[0], -1))[:, :n]


def _bits64(xp: Any, kd: Any, idx: Any) -> Any:
    """Random uint64 values at blocks ``idx`` (as :func:`_hash`): block ``i``, element ``i``."""
    y0, y1 = _hash(xp, kd, idx, _TAG_BITS)
    return (xp.astype(y0, xp.uint64) << 32) | xp.astype(y1, xp.uint64)


def _unit(xp: Any, kd: Any, idx: Any, dtype: np.dtype, *, open_: bool = False) -> Any:
    """Uniform floats ``m * 2**-p`` in ``[0, 1)`` from the top ``p`` mantissa bits.

    With ``open_``, ``(m + 0.5) * 2**-p`` in ``(0, 1)``: the same lattice shifted by half a
    step, symmetric about 1/2 and never 0 or 1 (for logarithms). Both are exact in ``dtype``
    (``m + 0.5`` needs ``p + 1`` significant bits, which every IEEE format has).
    ``idx``: an int ``n`` (elements ``0..n-1`` of each key, ``(K, n)``), or a ``(rows,
    cols)`` pair as in :func:`_hash` (float64 only).
    """
    p = MANTISSA[dtype]
    if p > 23:
        m = _bits64(xp, kd, idx) >> (64 - p)
    else:
        m = _bits32(xp, kd, idx) >> (32 - p)
    u = xp.astype(m, _xdt(xp, dtype))
    if open_:
        u = u + 0.5
    return u * (2.0**-p)


def _normal_flat(xp: Any, kd: Any, n: int, dtype: np.dtype) -> Any:
    """``(K, n)`` standard normals by Box-Muller: ``sqrt(-2 log u1) cos(2 pi u2)``."""
    u1 = _unit(xp, _subkey(xp, kd, 0), n, dtype, open_=True)
    u2 = _unit(xp, _subkey(xp, kd, 1), n, dtype)
    return xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2)


def _rejection(xp: Any, kd: Any, n: int, propose: Any, fn: str) -> Any:
    """Rejection sampling in rounds; element ``i`` of key ``k`` depends only on ``k``, ``i``.

    Round ``r`` calls ``propose(key_r, idx)`` with the ``(K, 2)`` sub-stream keys ``key_r``:
    first with ``idx = n`` (every element of every key), then with ``(rows, cols)`` of the
    pending elements (as :func:`_hash`), and keeps the accepted values. ``propose`` returns
    flat values and acceptances (``(K * n,)`` or ``(m,)``); the result is ``(K * n,)``. The
    number of rounds depends on the data, the output shape does not, so this runs inside a
    kernel, also under ``jit``.
    """
    out = idx = None
    for r in range(_MAX_ROUNDS):
        kr = _subkey(xp, kd, r)
        if out is None:
            out, ok = propose(kr, n)
            idx = xp.arange(out.shape[0], dtype=xp.int64)
        else:
            values, ok = propose(kr, (idx // n, idx % n))
            out[idx[ok]] = values[ok]  # numpy/cupy advanced assignment on our own array
        idx = idx[~ok]
        if idx.shape[0] == 0:
            return out
    raise RuntimeError(f"random.{fn}: rejection sampling did not finish in {_MAX_ROUNDS} rounds")


def _picker(xp: Any, idx: Any, n: int) -> Any:
    """``at(v)``: the entries of a flat ``(K * n,)`` per-element array ``v`` that a
    rejection round's ``idx`` (as :func:`_rejection` passes it) proposes for."""
    if isinstance(idx, int):
        return lambda v: v
    flat = idx[0] * n + idx[1]
    return lambda v: xp.take(v, flat)


# --------------------------------------------------------------------------- helpers


def _dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a dtype param (a numpy dtype, or a strict namespace's dtype)."""
    try:
        return np.dtype(dtype)
    except TypeError:  # array_api_strict.float32 and the like: by name
        return np.dtype(str(dtype).rsplit(".", 1)[-1])


def _xdt(xp: Any, dtype: Any) -> Any:
    """The namespace's own dtype object for a dtype (array_api_strict has its own)."""
    return getattr(xp, _dtype(dtype).name)


def _as(xp: Any, value: Any, dtype: Any) -> Any:
    """An input (array or Python scalar) as an ``xp`` array of ``dtype``."""
    return xp.astype(xp.asarray(value), _xdt(xp, dtype))


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _key_aval(op: str, key: Any) -> tuple[int, ...]:
    """Check a key's aval, a uint32 array of shape ``(2,)`` or a batch of keys ``(*kb,
    2)``; return the batch shape ``kb`` (``()`` for one key)."""
    dtype = np.dtype(dtypes.result_type(key))
    if dtype != np.uint32:
        raise DTypeError(f"{op}: a key is a uint32 array of shape (2,), got dtype {dtype}")
    shape = shape_of(key)
    if not shape or shape[-1] != 2:
        raise ShapeError(f"{op}: a key has shape (2,) (a batch of keys (..., 2)), got {shape}")
    return shape[:-1]


def _keys(xp: Any, key: Any) -> tuple[Any, tuple[int, ...]]:
    """A key or batch of keys ``(*kb, 2)`` as ``(K, 2)`` key data, and ``kb``."""
    kb = tuple(key.shape[:-1])
    return xp.reshape(key, (_size(kb), 2)), kb


def _fits(op: str, shape: tuple[int, ...], **inputs: Any) -> None:
    """Check that each input's shape broadcasts to ``shape``."""
    for name, x in inputs.items():
        s = shape_of(x)
        if not broadcasts_to(s, shape):
            raise ShapeError(f"{op}: {name} of shape {s} does not broadcast to shape {shape}")


def _real_input(op: str, name: str, x: Any) -> None:
    if np.dtype(dtypes.result_type(x)).kind not in "biuf":
        raise DTypeError(f"{op}: {name} must be real numbers, got dtype {dtypes.result_type(x)}")


def _key_args(*extra: Any):
    """``make_args`` for the sweep: a key (or a batch of keys, for a key shape ``(*kb, 2)``)
    from the rng, then the ``extra`` sampler inputs (each a function of ``(rng, shape)``),
    one per further input shape."""

    def make(rng, shapes):
        key = np.asarray(rng.integers(0, 2**32, shapes[0]), dtype=np.uint32)
        return [key, *(f(rng, s) for f, s in zip(extra, shapes[1:]))]

    return make


def no_derivative_message(sampler: str, name: str, what: str) -> str:
    """The TypeError text for a differentiated sampler parameter (shared with fgrad.random)."""
    fix = (
        "or reparameterise: for example minval + (maxval - minval) * random.uniform(key, "
        "shape) is differentiable"
        if sampler == "uniform"
        else f"or hold it constant with fgrad.stop_gradient({name})"
    )
    return (
        f"random.{sampler}: {name} is {what}; fgrad.random samplers have no derivatives. "
        f"Pass a concrete {name}, {fix}"
    )


def _no_derivative(sampler: str, name: str):
    """A jvp/vjp rule that refuses: samplers have no derivative in their bounds.

    Reached only through ``grad(jit(f))`` (plain grad stops in :mod:`fgrad.random` first);
    without it the derivative would silently be zero.
    """

    def rule(*args: Any, **params: Any) -> Any:
        raise TypeError(
            no_derivative_message(sampler, name, "differentiated through a jitted sampler")
        )

    return rule


def _refused(sampler: str, *bounds: str) -> tuple:
    """The jvp (and vjp) rules of a sampler whose ``bounds`` follow the key: all refuse."""
    return (None, *(_no_derivative(sampler, name) for name in bounds))


def _sampler_aval(op: str, *bounds: str):
    """The shape rule of a sampler of ``shape`` and ``dtype`` whose inputs after the key are
    the real ``bounds``: the output is ``(*kb, *shape)`` for keys ``(*kb, 2)``, and each
    bound broadcasts to it."""

    def aval(key, *values, shape, dtype):
        full = (*_key_aval(op, key), *shape)
        for name, x in zip(bounds, values):
            _real_input(op, name, x)
        _fits(op, full, **dict(zip(bounds, values)))
        return ShapeDtype(full, np.dtype(dtype))

    return aval


# --------------------------------------------------------------------------- vmap rules
#
# Every op takes a batch of keys ``(*kb, 2)`` and gives one result per key, ``(*kb, ...)``,
# computed by hashing all keys at once (Threefry is counter-based). Under ``vmap`` a
# mapped key is such a batch. A shared key with a mapped parameter (``p``, logits, bounds)
# is broadcast to one copy per example, so every example draws the same numbers, as the
# per-example loop does; the mapped parameters get unit axes after the mapped axis so that
# they broadcast against ``(B, *kb, *shape)``.


def _key_batch(op: Any, args: tuple, dims: tuple, **params: Any) -> tuple[Any, Any]:
    """Rule of the ops whose inputs after the key broadcast to ``(*kb, *shape)``."""
    size = batch_size(args, dims)
    key, *rest = args
    rank = ndim_of(key) - 1 - (dims[0] is not None) + len(params.get("shape", ()))
    key = with_batch(key, dims[0], size)
    rest = [aligned(x, d, rank) for x, d in zip(rest, dims[1:])]
    return op(key, *rest, **params), 0


def _categorical_batch(op: Any, args: tuple, dims: tuple, *, axis: int, shape: tuple):
    """Rule of ``random_categorical``: the logits' class axis moves past the added axes."""
    size = batch_size(args, dims)
    key, logits = args
    if dims[1] is not None:
        rank = ndim_of(key) - 1 - (dims[0] is not None) + len(shape)
        ex = shape_of(logits)[1:]
        missing = max(rank - (len(ex) - 1), 0)
        logits = aligned(logits, 0, rank + 1)
        axis = axis + 1 + missing
    return op(with_batch(key, dims[0], size), logits, axis=axis, shape=shape), 0


# Check cases shared by the samplers with two real bounds (uniform, truncated_normal).
_BOUNDED_SHAPES = (((2,), (), ()), ((2,), (3,), ()), ((2, 2), (2, 1), ()))
_FLOAT_PARAMS = (
    {"shape": (3,), "dtype": np.dtype(np.float64)},
    {"shape": (2, 3), "dtype": np.dtype(np.float32)},
)

_KEY_DOC = (
    "key: ``(2,)`` uint32 key array, or a batch of keys ``(*kb, 2)``: then the result\n"
    "            has ``kb`` in front, one result per key (what ``vmap`` over keys runs)."
)

# --------------------------------------------------------------------------- keys


def _split_kernel(xp, key, *, shape):
    kd, kb = _keys(xp, key)
    y0, y1 = _hash(xp, kd, _size(shape), _TAG_SPLIT)
    return xp.reshape(xp.stack([y0, y1], axis=2), (*kb, *shape, 2))


def _split_aval(key, *, shape):
    return ShapeDtype((*_key_aval("random_split", key), *shape, 2), _UINT32)


random_split = defop(
    "random_split",
    batch=_key_batch,
    kernel=_split_kernel,
    aval=_split_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,),), ((2, 2),)),
        params=({"shape": (3,)}, {"shape": (2, 2)}, {"shape": ()}),
        make_args=_key_args(),
    ),
    doc=f"""New keys from a key: key ``i`` is Threefry at counter ``(0x40000000, i)``.

    The op behind :func:`fgrad.random.split`.

    Args:
        {_KEY_DOC}
        shape: the batch shape of the new keys (a tuple of non-negative ints).

    Returns:
        uint32 Tensor of shape ``(*shape, 2)``.

    Example:
        >>> from fgrad.ops.random import random_split
        >>> random_split(fgrad.random.key(0), shape=(1,))
        Tensor([[1829400328,  293482607]], dtype=uint32)
    """,
)


def _fold_in_kernel(xp, key, data):
    kd, kb = _keys(xp, key)
    if isinstance(data, int):
        lo = data % 2**32
    else:  # an integer array: its low 32 bits (negative values wrap modulo 2**32)
        lo = xp.astype(xp.asarray(data), xp.int64)
        lo = xp.reshape(xp.broadcast_to(lo, kb), (kd.shape[0], 1))
        lo = xp.astype(lo & _MASK32, xp.uint32)
    return xp.reshape(_block(xp, kd, _TAG_FOLD << 30, lo), (*kb, 2))


def _fold_in_aval(key, data):
    kb = _key_aval("random_fold_in", key)
    dtype = np.dtype(dtypes.result_type(data))
    if dtype.kind not in "iu" or not broadcasts_to(shape_of(data), kb):
        raise DTypeError(
            "random_fold_in: data must be an integer scalar (one per key for a batch of "
            f"keys {kb}), got {ShapeDtype(shape_of(data), dtype)}"
        )
    return ShapeDtype((*kb, 2), _UINT32)


random_fold_in = defop(
    "random_fold_in",
    batch=_key_batch,
    kernel=_fold_in_kernel,
    aval=_fold_in_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,), ()), ((3, 2), ()), ((3, 2), (3,))),
        make_args=_key_args(lambda rng, s: np.asarray(rng.integers(-(2**31), 2**32, s), np.int64)),
    ),
    doc=f"""A key from a key and an integer: Threefry at counter ``(0x80000000, data mod 2**32)``.

    The op behind :func:`fgrad.random.fold_in`.

    Args:
        {_KEY_DOC}
        data: integer scalar (Python int or 0-d integer array); its low 32 bits are used.

    Returns:
        ``(2,)`` uint32 Tensor.

    Example:
        >>> from fgrad.ops.random import random_fold_in
        >>> random_fold_in(fgrad.random.key(0), 7)
        Tensor([1271512482,  634407644], dtype=uint32)
    """,
)


# --------------------------------------------------------------------------- samplers


def _bits_kernel(xp, key, *, shape, dtype):
    kd, kb = _keys(xp, key)
    dt = _dtype(dtype)
    n = _size(shape)
    if dt.itemsize == 8:
        flat = _bits64(xp, kd, n)
    else:
        flat = _bits32(xp, kd, n)
        if dt.itemsize < 4:
            flat = xp.astype(flat >> (32 - 8 * dt.itemsize), _xdt(xp, dt))
    return xp.reshape(flat, (*kb, *shape))


random_bits = defop(
    "random_bits",
    batch=_key_batch,
    kernel=_bits_kernel,
    aval=_sampler_aval("random_bits"),
    nondiff=True,
    check=Check(
        shapes=(((2,),), ((2, 2),)),
        params=tuple(
            {"shape": s, "dtype": np.dtype(d)}
            for s, d in (((5,), "uint32"), ((2, 3), "uint8"), ((), "uint16"), ((3,), "uint64"))
        ),
        make_args=_key_args(),
    ),
    doc=f"""Random unsigned integers from Threefry blocks of the key (stream tag 0).

    The op behind :func:`fgrad.random.bits`: element ``i`` of a 32-bit draw is word
    ``i % 2`` of block ``i // 2``; narrow dtypes keep the top bits of those words, and
    uint64 takes block ``i`` whole.

    Args:
        {_KEY_DOC}
        shape: output shape (a tuple of non-negative ints).
        dtype: uint8, uint16, uint32 or uint64 (a numpy dtype).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Example:
        >>> from fgrad.ops.random import random_bits
        >>> random_bits(fgrad.random.key(0), shape=(2,), dtype=np.dtype("uint32"))
        Tensor([1797259609, 2579123966], dtype=uint32)
    """,
)


def _uniform_kernel(xp, key, minval, maxval, *, shape, dtype):
    lo = _as(xp, minval, dtype)
    hi = _as(xp, maxval, dtype)
    if not bool(xp.all(xp.isfinite(lo)) and xp.all(xp.isfinite(hi)) and xp.all(lo < hi)):
        raise ValueError("random.uniform: needs finite bounds with minval < maxval")
    kd, kb = _keys(xp, key)
    u = xp.reshape(_unit(xp, kd, _size(shape), _dtype(dtype)), (*kb, *shape))
    out = xp.maximum(lo + (hi - lo) * u, lo)
    return xp.where(out < hi, out, xp.nextafter(hi, lo))  # rounding may reach maxval


def _bound_args(lo: int, hi: int):
    # Integer bounds: the sweep checks derivatives of floating inputs, and these rules
    # refuse on purpose (the kernel casts the bounds to the sample dtype).
    return _key_args(lambda rng, s: np.full(s, lo), lambda rng, s: np.full(s, hi))


random_uniform = defop(
    "random_uniform",
    batch=_key_batch,
    kernel=_uniform_kernel,
    aval=_sampler_aval("random_uniform", "minval", "maxval"),
    jvp=_refused("uniform", "minval", "maxval"),
    vjp=_refused("uniform", "minval", "maxval"),
    check=Check(shapes=_BOUNDED_SHAPES, params=_FLOAT_PARAMS, make_args=_bound_args(-1, 2)),
    doc=f"""Uniform floats ``minval + (maxval - minval) * u`` with ``u = m * 2**-p`` in ``[0, 1)``.

    The op behind :func:`fgrad.random.uniform`: ``p`` is 52 for float64 (64-bit draws),
    23 for float32 and 10 for float16 (32-bit words); results that round up to ``maxval``
    become the float just below it.

    Args:
        {_KEY_DOC}
        minval: real array or scalar, finite, broadcasting to ``shape``.
        maxval: real array or scalar, finite, ``> minval``, broadcasting to ``shape``.
        shape: output shape.
        dtype: float16, float32 or float64 (a numpy dtype).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: a bound is not finite, or ``minval >= maxval`` somewhere (when run).
        TypeError: ``minval`` or ``maxval`` is differentiated (no derivatives).

    Example:
        >>> from fgrad.ops.random import random_uniform
        >>> k = fgrad.random.key(0)
        >>> print(fnp.round(random_uniform(k, 0.0, 1.0, shape=(3,), dtype=np.dtype("float64")), 4))
        [0.4185 0.2163 0.9653]
    """,
)


def _normal_kernel(xp, key, *, shape, dtype):
    kd, kb = _keys(xp, key)
    dt = _dtype(dtype)
    n = _size(shape)
    if dt.kind == "c":
        part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        re = _normal_flat(xp, _subkey(xp, kd, 2), n, part)
        im = _normal_flat(xp, _subkey(xp, kd, 3), n, part)
        flat = (xp.astype(re, _xdt(xp, dt)) + 1j * xp.astype(im, _xdt(xp, dt))) * (0.5**0.5)
    elif dt == np.float16:
        flat = xp.astype(_normal_flat(xp, kd, n, np.dtype(np.float32)), xp.float16)
    else:
        flat = _normal_flat(xp, kd, n, dt)
    return xp.reshape(flat, (*kb, *shape))


random_normal = defop(
    "random_normal",
    batch=_key_batch,
    kernel=_normal_kernel,
    aval=_sampler_aval("random_normal"),
    nondiff=True,
    check=Check(
        shapes=(((2,),), ((2, 2),)),
        params=tuple(
            {"shape": s, "dtype": np.dtype(d)}
            for s, d in (
                ((4,), "float64"),
                ((2, 3), "float32"),
                ((3,), "complex64"),
                ((3,), "complex128"),
            )
        ),
        make_args=_key_args(),
    ),
    doc=f"""Standard normal samples by Box-Muller, ``sqrt(-2 log u1) cos(2 pi u2)``.

    The op behind :func:`fgrad.random.normal`: ``u1`` on the open interval ``(0, 1)`` and
    ``u2`` on ``[0, 1)`` from sub-streams 0 and 1 of the key; float16 computes in float32;
    complex dtypes take their real and imaginary parts from sub-streams 2 and 3, each with
    variance 1/2.

    Args:
        {_KEY_DOC}
        shape: output shape.
        dtype: float16, float32, float64, complex64 or complex128 (a numpy dtype).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Example:
        >>> from fgrad.ops.random import random_normal
        >>> z = random_normal(fgrad.random.key(0), shape=(3,), dtype=np.dtype("float64"))
        >>> print(fnp.round(z, 4))
        [-1.1943  1.0607  0.367 ]

    References:
        G. E. P. Box, M. E. Muller, "A Note on the Generation of Random Normal Deviates",
        Ann. Math. Statist. 29(2), 1958.
    """,
)


def _bernoulli_kernel(xp, key, p, *, shape):
    prob = _as(xp, p, np.float64)
    kd, kb = _keys(xp, key)
    w = xp.reshape(_bits32(xp, kd, _size(shape)), (*kb, *shape))
    return xp.astype(w, xp.float64) < prob * 4294967296.0


def _bernoulli_aval(key, p, *, shape):
    full = (*_key_aval("random_bernoulli", key), *shape)
    _real_input("random_bernoulli", "p", p)
    _fits("random_bernoulli", full, p=p)
    return ShapeDtype(full, dtypes.bool_)


random_bernoulli = defop(
    "random_bernoulli",
    batch=_key_batch,
    kernel=_bernoulli_kernel,
    aval=_bernoulli_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,), ()), ((2,), (3,)), ((2, 2), (2, 1, 3))),
        params=({"shape": (3,)}, {"shape": (2, 3)}),
        make_args=_key_args(lambda rng, s: rng.uniform(0.0, 1.0, s)),
    ),
    doc=f"""Bernoulli samples: element ``i`` is ``w_i < p * 2**32`` for a 32-bit word ``w_i``.

    The op behind :func:`fgrad.random.bernoulli`.

    Args:
        {_KEY_DOC}
        p: real array or scalar of probabilities, broadcasting to ``shape``.
        shape: output shape.

    Returns:
        bool Tensor of ``shape``.

    Example:
        >>> from fgrad.ops.random import random_bernoulli
        >>> random_bernoulli(fgrad.random.key(0), 0.5, shape=(4,))
        Tensor([ True, False,  True, False], dtype=bool)
    """,
)


def _categorical_kernel(xp, key, logits, *, axis, shape):
    lg = xp.moveaxis(_as(xp, logits, np.float64), axis, -1)
    kd, kb = _keys(xp, key)
    full = (*kb, *shape, lg.shape[-1])
    u = xp.reshape(_unit(xp, kd, _size(full[len(kb) :]), np.dtype(np.float64), open_=True), full)
    gumbel = -xp.log(-xp.log(u))
    return xp.astype(xp.argmax(lg + gumbel, axis=-1), xp.int64)


def _categorical_aval(key, logits, *, axis, shape):
    shape = (*_key_aval("random_categorical", key), *shape)
    _real_input("random_categorical", "logits", logits)
    lshape = shape_of(logits)
    if not 0 <= axis < len(lshape):
        raise ShapeError(f"random_categorical: logits of shape {lshape} have no axis {axis}")
    batch = lshape[:axis] + lshape[axis + 1 :]
    _fits("random_categorical", shape, logits_batch=ShapeDtype(batch, dtypes.float64))
    return ShapeDtype(shape, dtypes.int64)


random_categorical = defop(
    "random_categorical",
    batch=_categorical_batch,
    kernel=_categorical_kernel,
    aval=_categorical_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,), (4,)), ((2,), (2, 3)), ((2, 2), (4, 2, 1))),
        params=({"axis": 0, "shape": (3,)}, {"axis": 0, "shape": (2, 3)}),
        make_args=_key_args(lambda rng, s: rng.normal(size=s)),
    ),
    doc=f"""Class indices ``argmax(logits + g, axis)``, ``g`` standard Gumbel noise (Gumbel-max).

    The op behind :func:`fgrad.random.categorical`; ``g = -log(-log(u))`` for ``u`` on the
    open interval ``(0, 1)``, in float64, drawn for the output shape times the classes.

    Args:
        {_KEY_DOC}
        logits: real array; ``axis`` indexes classes, and the other axes broadcast to
            ``shape``.
        axis: the class axis of ``logits`` (a non-negative int).
        shape: output shape.

    Returns:
        int64 Tensor of ``shape``.

    Example:
        >>> from fgrad.ops.random import random_categorical
        >>> logits = fnp.log(fnp.array([0.1, 0.2, 0.7]))
        >>> random_categorical(fgrad.random.key(0), logits, axis=0, shape=(6,))
        Tensor([2, 2, 2, 1, 1, 2], dtype=int64)

    References:
        E. J. Gumbel, "Statistical Theory of Extreme Values and Some Practical
        Applications", 1954.
    """,
)


def _randint_kernel(xp, key, minval, maxval, *, shape, dtype):
    lo = _as(xp, minval, np.int64)
    hi = _as(xp, maxval, np.int64)
    info = np.iinfo(_dtype(dtype))
    if not bool(xp.all(lo < hi)):
        raise ValueError("random.randint: needs minval < maxval everywhere")
    if not bool(xp.all(lo >= info.min) and xp.all(hi - 1 <= info.max)):
        raise ValueError(
            f"random.randint: bounds must lie in [{info.min}, {info.max + 1}] for dtype "
            f"{_dtype(dtype)}"
        )
    kd, kb = _keys(xp, key)
    n, full = _size(shape), (*kb, *shape)
    lo_u = xp.reshape(xp.astype(xp.broadcast_to(lo, full), xp.uint64), (-1,))
    span = xp.reshape(xp.astype(xp.broadcast_to(hi, full), xp.uint64), (-1,)) - lo_u
    # 2**64 mod span, as (2**64 - span) mod span in wrapping uint64 arithmetic.
    rem = (~span + 1) % span
    accept_max = ~rem  # 2**64 - 1 - rem: accepted words are w <= this

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        w = xp.reshape(_bits64(xp, kr, idx), (-1,))
        if isinstance(idx, int):
            return w % span, w <= accept_max
        flat = idx[0] * n + idx[1]
        return w % xp.take(span, flat), w <= xp.take(accept_max, flat)

    r = _rejection(xp, kd, n, propose, "randint")
    return xp.reshape(xp.astype(lo_u + r, _xdt(xp, dtype)), full)


def _randint_aval(key, minval, maxval, *, shape, dtype):
    shape = (*_key_aval("random_randint", key), *shape)
    for name, x in (("minval", minval), ("maxval", maxval)):
        if np.dtype(dtypes.result_type(x)).kind not in "biu":
            raise DTypeError(
                f"random_randint: {name} must be integers, got {dtypes.result_type(x)}"
            )
    _fits("random_randint", shape, minval=minval, maxval=maxval)
    return ShapeDtype(shape, np.dtype(dtype))


random_randint = defop(
    "random_randint",
    batch=_key_batch,
    kernel=_randint_kernel,
    aval=_randint_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,), (), ()), ((2,), (3,), ()), ((2, 2), (2, 1, 3), ())),
        params=(
            {"shape": (2, 3), "dtype": np.dtype(np.int64)},
            {"shape": (5, 3), "dtype": np.dtype(np.uint8)},
        ),
        make_args=_key_args(
            lambda rng, s: rng.integers(0, 5, s), lambda rng, s: rng.integers(6, 200, s)
        ),
        strict=False,  # rejection rounds write accepted values back by integer-array assignment
    ),
    doc=f"""Uniform integers in ``[minval, maxval)``, exactly unbiased by rejection.

    The op behind :func:`fgrad.random.randint` (Lemire's threshold): a 64-bit word ``w``
    is accepted when ``w < 2**64 - (2**64 mod span)`` and gives ``minval + w mod span``;
    rejected elements are redrawn from sub-stream ``r`` of the key in round ``r``.

    Args:
        {_KEY_DOC}
        minval: integer array or scalar (inclusive), broadcasting to ``shape``.
        maxval: integer array or scalar (exclusive), ``> minval``, broadcasting to ``shape``.
        shape: output shape.
        dtype: an integer dtype (a numpy dtype) holding ``[minval, maxval)``.

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: ``minval >= maxval`` somewhere, or a bound outside ``dtype`` (when run).

    Example:
        >>> from fgrad.ops.random import random_randint
        >>> random_randint(fgrad.random.key(0), 0, 10, shape=(5,), dtype=np.dtype("int64"))
        Tensor([2, 9, 1, 0, 2], dtype=int64)

    References:
        D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 29(1), 2019.
    """,
)


def _argsort(xp: Any, a: Any) -> Any:
    try:
        return xp.argsort(a, axis=-1, stable=True)
    except TypeError:  # older cupy: numpy's former keyword
        return xp.argsort(a, axis=-1, kind="stable")


def _permutation_kernel(xp, key, *, shape):
    kd, kb = _keys(xp, key)
    n, full = shape[-1], (*kb, *shape)
    rounds = max(1, math.ceil(3 * math.log2(max(n, 2)) / 64))
    idx = xp.broadcast_to(xp.arange(n, dtype=xp.int64), full)
    for r in range(rounds):
        sort_keys = xp.reshape(_bits64(xp, _subkey(xp, kd, r), _size(shape)), full)
        idx = xp.take_along_axis(idx, _argsort(xp, sort_keys), axis=-1)
    return idx


def _permutation_aval(key, *, shape):
    kb = _key_aval("random_permutation", key)
    if not shape:
        raise ShapeError("random_permutation: shape needs at least one axis")
    return ShapeDtype((*kb, *shape), dtypes.int64)


random_permutation = defop(
    "random_permutation",
    batch=_key_batch,
    kernel=_permutation_kernel,
    aval=_permutation_aval,
    nondiff=True,
    check=Check(
        shapes=(((2,),), ((2, 2),)),
        params=({"shape": (6,)}, {"shape": (3, 4)}, {"shape": (0,)}),
        make_args=_key_args(),
    ),
    doc=f"""Random permutations of ``arange(shape[-1])``, one per slice along the last axis.

    The op behind :func:`fgrad.random.permutation`: stable sorts by random 64-bit keys,
    ``ceil(3 log2(n) / 64)`` rounds (at least one), each re-sorting by fresh keys from
    sub-stream ``r``; the slices are independent.

    Args:
        {_KEY_DOC}
        shape: output shape, at least one axis.

    Returns:
        int64 Tensor of ``shape``.

    Example:
        >>> from fgrad.ops.random import random_permutation
        >>> random_permutation(fgrad.random.key(0), shape=(5,))
        Tensor([1, 0, 3, 4, 2], dtype=int64)

    References:
        D. E. Knuth, TAOCP vol. 2, 3rd ed., section 3.4.2 (shuffling by sorting random keys).
    """,
)


def _truncated_normal_kernel(xp, key, lower, upper, *, shape, dtype):
    lo = _as(xp, lower, np.float64)
    hi = _as(xp, upper, np.float64)
    if not bool(xp.all(lo < hi)):
        raise ValueError("random.truncated_normal: needs lower < upper everywhere (and no NaN)")
    kd, kb = _keys(xp, key)
    n, full = _size(shape), (*kb, *shape)
    lo = xp.reshape(xp.broadcast_to(lo, full), (-1,))
    hi = xp.reshape(xp.broadcast_to(hi, full), (-1,))
    flip = hi <= 0.0
    a = xp.where(flip, -hi, lo)  # now a < 0 < b, or 0 <= a < b
    b = xp.where(flip, -lo, hi)
    straddle = a < 0.0
    sqrt_a2_4 = xp.sqrt(xp.where(straddle, 0.0, a) ** 2 + 4.0)
    a_pos = xp.where(straddle, 0.0, a)
    alpha = (a_pos + sqrt_a2_4) / 2.0
    # Which proposal accepts more often (Robert 1995, sections 2.1-2.2; derivation: compare
    # acceptance rates e^{a^2/2} I/(b-a) and alpha e^{alpha a - alpha^2/2} I).
    use_normal = straddle & (b - a >= math.sqrt(2.0 * math.pi))
    use_exp = ~straddle & (b - a >= xp.exp((alpha - a_pos) ** 2 / 2.0) / alpha)
    use_unif = ~use_normal & ~use_exp
    m2 = xp.where(straddle, 0.0, a_pos**2)  # squared distance of [a, b] from 0
    a_u = xp.where(use_unif, a, 0.0)  # finite stand-ins where a branch is not used
    b_u = xp.where(use_unif, b, 1.0)
    one = np.dtype(np.float64)

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        u1 = xp.reshape(_unit(xp, _subkey(xp, kr, 0), idx, one, open_=True), (-1,))
        u2 = xp.reshape(_unit(xp, _subkey(xp, kr, 1), idx, one, open_=True), (-1,))
        at = _picker(xp, idx, n)
        aa, bb, al = at(a), at(b), at(alpha)
        z_norm = xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2)
        z_unif = at(a_u) + (at(b_u) - at(a_u)) * u1
        z_exp = at(a_pos) - xp.log(u1) / al
        log_u2 = xp.log(u2)
        ok_unif = log_u2 <= (at(m2) - z_unif**2) / 2.0
        ok_exp = (z_exp <= bb) & (log_u2 <= -((z_exp - al) ** 2) / 2.0)
        un, ue = at(use_normal), at(use_exp)
        z = xp.where(un, z_norm, xp.where(ue, z_exp, z_unif))
        ok = xp.where(un, (aa <= z_norm) & (z_norm <= bb), xp.where(ue, ok_exp, ok_unif))
        return xp.minimum(xp.maximum(z, aa), bb), ok

    z = _rejection(xp, kd, n, propose, "truncated_normal")
    z = xp.where(flip, -z, z)
    return xp.reshape(xp.astype(z, _xdt(xp, dtype)), full)


random_truncated_normal = defop(
    "random_truncated_normal",
    batch=_key_batch,
    kernel=_truncated_normal_kernel,
    aval=_sampler_aval("random_truncated_normal", "lower", "upper"),
    jvp=_refused("truncated_normal", "lower", "upper"),
    vjp=_refused("truncated_normal", "lower", "upper"),
    check=Check(
        shapes=_BOUNDED_SHAPES,
        params=_FLOAT_PARAMS,
        make_args=_bound_args(-1, 2),
        strict=False,  # rejection rounds write accepted values back by integer-array assignment
    ),
    doc=f"""Standard normal samples conditioned on ``lower <= z <= upper``, by exact rejection.

    The op behind :func:`fgrad.random.truncated_normal` (Robert 1995: normal, uniform or
    shifted-exponential proposals per element, each accepted with probability above
    0.45), computed in float64 and rounded to ``dtype``; rejected elements are redrawn from
    sub-stream ``r`` of the key in round ``r``.

    Args:
        {_KEY_DOC}
        lower: real array or scalar (may be ``-inf``), broadcasting to ``shape``.
        upper: real array or scalar, ``> lower`` (may be ``inf``), broadcasting to ``shape``.
        shape: output shape.
        dtype: float16, float32 or float64 (a numpy dtype).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: ``lower >= upper`` somewhere or a NaN bound (when run).
        TypeError: ``lower`` or ``upper`` is differentiated (no derivatives).

    Example:
        >>> from fgrad.ops.random import random_truncated_normal
        >>> k = fgrad.random.key(0)
        >>> z = random_truncated_normal(k, -1.0, 2.0, shape=(3,), dtype=np.dtype("float64"))
        >>> print(fnp.round(z, 4))
        [-0.2595  0.6113  0.794 ]

    References:
        C. P. Robert, "Simulation of truncated normal variables", Statistics and Computing
        5(2), 121-125, 1995.
    """,
)


# --------------------------------------------------------------------------- gamma family
#
# Gamma samples carry the implicit reparameterisation gradient in the concentration
# (Figurnov, Mohamed and Mnih 2018): with F(x; alpha) the CDF, the sample x = F^-1(u; alpha)
# for a fixed uniform u moves as dx/dalpha = -(dF/dalpha) / pdf(x; alpha). The sampler itself
# (rejection) never enters the derivative; only the sample and alpha do, through
# ``random_gamma_grad``.

_GAMMA_MAX_ITER = 4000  # series / continued-fraction terms; O(sqrt(alpha)) are needed
_CF_TOL = 32 * _EPS64  # a continued-fraction step below this is converged


def _gamma_flat(xp: Any, kd: Any, alpha: Any, n: int) -> Any:
    """``(K * n,)`` float64 log Gamma(alpha) samples for the flat ``(K * n,)`` ``alpha > 0``.

    Marsaglia and Tsang (2000): for ``a >= 1``, ``d = a - 1/3``, ``c = 1 / sqrt(9 d)``,
    propose ``v = (1 + c z)**3`` for a standard normal ``z`` and accept ``d v`` when
    ``log u < z**2 / 2 + d - d v + d log v`` (probability above 0.95). For ``a < 1`` the
    boost: ``Gamma(a) = Gamma(a + 1) * u**(1/a)``, taken in log space so that small ``a``
    does not underflow. Rejection rounds use sub-stream 0 of the key, the boost sub-stream 1.
    """
    boost = alpha < 1.0
    d = xp.where(boost, alpha + 1.0, alpha) - 1.0 / 3.0
    c = 1.0 / xp.sqrt(9.0 * d)
    f64 = np.dtype(np.float64)

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        at = _picker(xp, idx, n)
        u1, u2, u3 = (
            xp.reshape(_unit(xp, _subkey(xp, kr, j), idx, f64, open_=j != 1), (-1,))
            for j in range(3)
        )
        z = xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2)
        dd, cc = at(d), at(c)
        v = 1.0 + cc * z
        pos = v > 0.0
        v3 = xp.where(pos, v, 1.0) ** 3
        ok = pos & (xp.log(u3) < 0.5 * z * z + dd - dd * v3 + dd * xp.log(v3))
        return xp.log(dd * v3), ok

    log_x = _rejection(xp, _subkey(xp, kd, 0), n, propose, "gamma")
    u = xp.reshape(_unit(xp, _subkey(xp, kd, 1), n, f64, open_=True), (-1,))
    return xp.where(boost, log_x + xp.log(u) / alpha, log_x)


def _gamma_kernel(xp, key, alpha, *, shape, dtype, log_space):
    a = _as(xp, alpha, np.float64)
    if not bool(xp.all(a > 0.0)):
        raise ValueError("random.gamma: needs a > 0 everywhere (and no NaN)")
    kd, kb = _keys(xp, key)
    n, full = _size(shape), (*kb, *shape)
    log_x = _gamma_flat(xp, kd, xp.reshape(xp.broadcast_to(a, full), (-1,)), n)
    out = log_x if log_space else xp.exp(log_x)
    return xp.reshape(xp.astype(out, _xdt(xp, dtype)), full)


def _gamma_grad64(xp: Any, a: Any, sample: Any, log_space: bool) -> Any:
    """``dx/da = -(dP/da)(x; a) / pdf(x; a)`` (or ``d log x / da`` with ``log_space``).

    Forward-mode derivatives in ``a`` of the two expansions of the incomplete gamma
    function (Numerical Recipes, 3rd ed., 6.2), divided by the density analytically so that
    no exponential is formed: for ``x < a + 1`` the series ``P = x^a e^-x / Gamma(a + 1) S``,
    ``S = sum_n t_n``, ``t_n = t_(n-1) x / (a + n)``, gives
    ``dx/da = -(x / a) (S (log x - psi(a + 1)) + dS/da)``; for ``x >= a + 1`` Legendre's
    continued fraction ``Q = x^a e^-x / Gamma(a) h`` (its convergents' recurrences
    differentiated along) gives ``dx/da = x (h (log x - psi(a)) + dh/da)``.
    """
    a, sample = a + xp.zeros_like(sample), sample + xp.zeros_like(a)
    log_x = sample if log_space else xp.log(sample)
    x = xp.exp(log_x) if log_space else sample
    ok = (a > 0) & (x > 0) & (x < math.inf)
    aa = xp.where(ok, a, 1.0)
    xx = xp.where(ok, x, 1.0)
    lx = xp.where(ok, log_x, 0.0)
    series_side = xx < aa + 1.0
    # series, on x < a + 1 (elsewhere a stand-in x = a / 2)
    xs = xp.where(series_side, xx, 0.5 * aa)
    lxs = xp.where(series_side, lx, xp.log(xs))
    t, dt = xp.ones_like(xs), xp.zeros_like(xs)
    s, ds = xp.ones_like(xs), xp.zeros_like(xs)
    den = aa
    for k in range(_GAMMA_MAX_ITER):
        den = den + 1.0
        t = t * xs / den
        dt = (dt * xs - t) / den
        s, ds = s + t, ds + dt
        if k % 16 == 15 and not bool(
            xp.any((t > _EPS64 * s) | (xp.abs(dt) > _EPS64 * (xp.abs(ds) + s)))
        ):
            break
    inner = s * (lxs - _digamma64(xp, aa + 1.0)) + ds
    g_series = -inner / aa if log_space else -(xs / aa) * inner
    # continued fraction, on x >= a + 1 (elsewhere a stand-in x = a + 2): convergents
    # A_i / B_i of b_0 + a_1 / (b_1 + a_2 / (b_2 + ...)), a_i = i (a - i), b_i = x + 1 - a + 2 i,
    # and their derivatives in a, rescaled together (the ratios are unchanged)
    xc = xp.where(series_side, aa + 2.0, xx)
    lxc = xp.where(series_side, xp.log(xc), lx)
    a0, b0 = xp.ones_like(xc), xp.zeros_like(xc)  # A_-1, B_-1
    da0, db0 = xp.zeros_like(xc), xp.zeros_like(xc)
    a1, b1 = xc + 1.0 - aa, xp.ones_like(xc)  # A_0, B_0
    da1, db1 = -xp.ones_like(xc), xp.zeros_like(xc)
    h, dh = b1 / a1, (db1 * a1 - b1 * da1) / (a1 * a1)
    for i in range(1, _GAMMA_MAX_ITER):
        an, bn = i * (aa - i), xc + 1.0 - aa + 2.0 * i
        a2 = bn * a1 + an * a0
        b2 = bn * b1 + an * b0
        da2 = -a1 + bn * da1 + i * a0 + an * da0
        db2 = -b1 + bn * db1 + i * b0 + an * db0
        scale = 1.0 / xp.where(b2 != 0.0, b2, 1.0)
        a0, b0, da0, db0 = a1 * scale, b1 * scale, da1 * scale, db1 * scale
        a1, b1, da1, db1 = a2 * scale, b2 * scale, da2 * scale, db2 * scale
        h_new = b1 / a1
        dh_new = (db1 * a1 - b1 * da1) / (a1 * a1)
        # dh may pass through 0: its error is measured against |h| too (both enter dx/da)
        # (steps of a few ulps are rounding noise, which need not settle)
        done = (xp.abs(h_new - h) <= _CF_TOL * xp.abs(h_new)) & (
            xp.abs(dh_new - dh) <= _CF_TOL * (xp.abs(dh_new) + xp.abs(h_new))
        )
        h, dh = h_new, dh_new
        if i % 16 == 15 and bool(xp.all(done)):
            break
    inner = h * (lxc - _digamma64(xp, aa)) + dh
    g_cf = inner if log_space else xc * inner
    out = xp.where(ok, xp.where(series_side, g_series, g_cf), math.nan)
    if not log_space:  # x = 0, an underflowed sample of a tiny a, stays at 0
        out = xp.where((x == 0) & (a > 0), 0.0, out)
    return out


def _gamma_grad_kernel(xp, alpha, sample, *, log_space):
    name = _dtype(sample.dtype).name
    with np.errstate(all="ignore"):
        out = _gamma_grad64(xp, _as(xp, alpha, np.float64), _as(xp, sample, np.float64), log_space)
    return xp.astype(out, _xdt(xp, name if name in ("float16", "float32") else "float64"))


def _gamma_grad_aval(alpha, sample, *, log_space):
    for name, x in (("alpha", alpha), ("sample", sample)):
        _real_input("random_gamma_grad", name, x)
    try:
        shape = tuple(np.broadcast_shapes(shape_of(alpha), shape_of(sample)))
    except ValueError:
        raise ShapeError(
            f"random_gamma_grad: alpha of shape {shape_of(alpha)} and sample of shape "
            f"{shape_of(sample)} do not broadcast"
        ) from None
    dt = np.dtype(dtypes.result_type(sample))
    return ShapeDtype(shape, dt if dt.kind == "f" else np.dtype(np.float64))


def _gamma_grad_refused(*args: Any, **params: Any) -> Any:
    raise TypeError(
        "random_gamma_grad: second derivatives of gamma samples (and of beta, dirichlet, t "
        "and ball samples, built on them) are not implemented, as in JAX; differentiate "
        "the samples once, or hold the concentration constant with fgrad.stop_gradient"
    )


random_gamma_grad = defop(
    "random_gamma_grad",
    batch=elementwise_batch,
    kernel=_gamma_grad_kernel,
    aval=_gamma_grad_aval,
    jvp=(_gamma_grad_refused, _gamma_grad_refused),
    vjp=(_gamma_grad_refused, _gamma_grad_refused),
    check=Check(
        shapes=(((), ()), ((3,), (3,)), ((2, 3), (3,))),
        params=({"log_space": False}, {"log_space": True}),
        # integer inputs: the rules refuse on purpose (second derivatives), so the sweep
        # checks the shape rule, batching and the kernel only
        make_args=lambda rng, shapes: [rng.integers(1, 6, s) for s in shapes],
    ),
    doc="""The implicit derivative ``dx/dalpha`` of a Gamma(alpha) sample ``x``.

    ``-(dF/dalpha)(x; alpha) / pdf(x; alpha)`` with ``F`` the regularised lower incomplete
    gamma function: how ``x = F^-1(u; alpha)`` moves with ``alpha`` at a fixed ``u``; with
    ``log_space=True``, ``sample`` is ``log x`` and the result ``d log x / dalpha``. The
    JVP and VJP rule of :func:`random_gamma`. Computed in float64 by forward-mode
    derivatives of the series (``x < alpha + 1``) and the continued fraction (otherwise).

    Args:
        alpha: real array or scalar, ``> 0``.
        sample: real array or scalar broadcasting with ``alpha``: ``x >= 0`` (or ``log x``).
        log_space: whether ``sample`` and the result are in log space.

    Returns:
        Tensor of the broadcast shape, ``sample``'s floating dtype; NaN where ``alpha <= 0``.

    Raises:
        TypeError: differentiated again (second derivatives are not implemented).

    Example:
        >>> from fgrad.ops.random import random_gamma_grad
        >>> print(fnp.round(random_gamma_grad(1.0, fnp.array([0.5, 2.0]), log_space=False), 6))
        [0.806979 1.631691]

    References:
        M. Figurnov, S. Mohamed, A. Mnih, "Implicit Reparameterization Gradients",
        NeurIPS 2018, eq. (5) and appendix (the gamma derivative).
    """,
)


def _gamma_jvp(t, out, key, alpha, *, shape, dtype, log_space):
    return multiply(t, random_gamma_grad(alpha, out, log_space=log_space))


def _gamma_vjp(ct, out, key, alpha, *, shape, dtype, log_space):
    return multiply(ct, random_gamma_grad(alpha, out, log_space=log_space))


def _gamma_aval(key, alpha, *, shape, dtype, log_space):
    return _sampler_aval("random_gamma", "alpha")(key, alpha, shape=shape, dtype=dtype)


random_gamma = defop(
    "random_gamma",
    batch=_key_batch,
    kernel=_gamma_kernel,
    aval=_gamma_aval,
    jvp=(None, _gamma_jvp),
    vjp=(None, _gamma_vjp),
    check=Check(
        shapes=(((2,), ()), ((2,), (3,)), ((2, 2), (2, 1))),
        params=(
            {"shape": (3,), "dtype": np.dtype(np.float64), "log_space": False},
            {"shape": (2, 3), "dtype": np.dtype(np.float32), "log_space": True},
        ),
        # integer alpha: finite differences of a rejection sampler at a fixed key are not the
        # implicit gradient (a different coupling of the samples across alpha), so the sweep
        # checks the shape rule and batching; tests/random/ checks the derivative
        make_args=_key_args(lambda rng, s: rng.integers(1, 4, s)),
        strict=False,  # rejection rounds write accepted values back by integer-array assignment
    ),
    doc=f"""Gamma(alpha, 1) samples (Marsaglia-Tsang), with the implicit gradient in ``alpha``.

    The op behind :func:`fgrad.random.gamma` and :func:`fgrad.random.loggamma`: log-space
    rejection sampling in float64, rounded to ``dtype``; the derivative in ``alpha`` is
    :func:`random_gamma_grad` of the sample (Figurnov et al. 2018).

    Args:
        {_KEY_DOC}
        alpha: real array or scalar, ``> 0``, broadcasting to ``shape``.
        shape: output shape.
        dtype: float16, float32 or float64 (a numpy dtype).
        log_space: return ``log x`` (stable for small ``alpha``).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: ``alpha <= 0`` or NaN somewhere (when run).

    Example:
        >>> from fgrad.ops.random import random_gamma
        >>> k = fgrad.random.key(0)
        >>> x = random_gamma(k, 2.0, shape=(3,), dtype=np.dtype("float64"), log_space=False)
        >>> print(fnp.round(x, 4))
        [4.0569 1.6936 0.9944]

    References:
        G. Marsaglia, W. W. Tsang, "A Simple Method for Generating Gamma Variables", ACM
        TOMS 26(3), 2000; M. Figurnov, S. Mohamed, A. Mnih, "Implicit Reparameterization
        Gradients", NeurIPS 2018.
    """,
)


# --------------------------------------------------------------------------- counts

_INVERSION_BELOW = 10.0  # mean below which counts are drawn by inversion, above by rejection
_MAX_INVERSION = 1000


def _inversion(xp: Any, u: Any, first: Any, ratio: Any, top: Any) -> Any:
    """The smallest ``k`` with ``u <= F(k)``, walking the pmf up from ``pmf(0) = first`` by
    ``pmf(k) = pmf(k - 1) * ratio(k)``, stopped at ``top`` or where the pmf's remaining
    mass is below rounding (``u`` within ``2**-53`` of 1)."""
    k = xp.zeros_like(u)
    pmf, cdf = first, first
    for _ in range(_MAX_INVERSION):
        more = (u > cdf) & (k < top) & (pmf > _EPS64 * cdf)
        if not bool(xp.any(more)):
            break
        k = k + xp.where(more, 1.0, 0.0)
        pmf = xp.where(more, pmf * ratio(xp.maximum(k, 1.0)), pmf)
        cdf = cdf + xp.where(more, pmf, 0.0)
    return k


def _poisson_kernel(xp, key, lam, *, shape, dtype):
    rate = _as(xp, lam, np.float64)
    if not bool(xp.all((rate >= 0.0) & (rate < math.inf))):
        raise ValueError("random.poisson: needs a finite lam >= 0 everywhere (and no NaN)")
    kd, kb = _keys(xp, key)
    n, full = _size(shape), (*kb, *shape)
    rate = xp.reshape(xp.broadcast_to(rate, full), (-1,))
    f64 = np.dtype(np.float64)
    small = rate < _INVERSION_BELOW
    # inversion for a small rate: pmf(k) = pmf(k - 1) lam / k
    ls = xp.where(small, rate, 0.0)
    u = xp.reshape(_unit(xp, _subkey(xp, kd, 0), n, f64), (-1,))
    k_small = _inversion(xp, u, xp.exp(-ls), lambda k: ls / k, math.inf)
    # PTRS for a large rate (Hormann 1993, with numpy's constants)
    lb = xp.where(small, _INVERSION_BELOW, rate)
    log_lam = xp.log(lb)
    b = 0.931 + 2.53 * xp.sqrt(lb)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = xp.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        at = _picker(xp, idx, n)
        uu = xp.reshape(_unit(xp, _subkey(xp, kr, 0), idx, f64, open_=True), (-1,)) - 0.5
        v = xp.reshape(_unit(xp, _subkey(xp, kr, 1), idx, f64, open_=True), (-1,))
        us = 0.5 - xp.abs(uu)
        aa, bb, lam_ = at(a), at(b), at(lb)
        k = xp.floor((2.0 * aa / us + bb) * uu + lam_ + 0.43)
        quick = (us >= 0.07) & (v <= at(vr))
        valid = (k >= 0.0) & ~((us < 0.013) & (v > us))
        kc = xp.maximum(k, 0.0)
        lhs = xp.log(v) + at(log_inv_alpha) - xp.log(aa / (us * us) + bb)
        rhs = -lam_ + kc * at(log_lam) - _gammaln64(xp, kc + 1.0)
        return kc, quick | (valid & (lhs <= rhs)) | at(small)

    k_large = _rejection(xp, _subkey(xp, kd, 1), n, propose, "poisson")
    out = xp.where(small, k_small, k_large)
    return xp.reshape(xp.astype(out, _xdt(xp, dtype)), full)


random_poisson = defop(
    "random_poisson",
    batch=_key_batch,
    kernel=_poisson_kernel,
    aval=_sampler_aval("random_poisson", "lam"),
    nondiff=True,
    check=Check(
        shapes=(((2,), ()), ((2,), (3,)), ((2, 2), (2, 1))),
        params=(
            {"shape": (3,), "dtype": np.dtype(np.int64)},
            {"shape": (2, 3), "dtype": np.dtype(np.int32)},
        ),
        make_args=_key_args(lambda rng, s: rng.uniform(0.5, 40.0, s)),
        strict=False,  # rejection rounds write accepted values back by integer-array assignment
    ),
    doc=f"""Poisson(lam) counts: inversion for ``lam < 10``, transformed rejection (PTRS) above.

    The op behind :func:`fgrad.random.poisson`. Inversion walks the CDF from one uniform of
    sub-stream 0; PTRS (Hormann 1993) draws its pairs of uniforms from sub-stream 1, in
    rejection rounds (acceptance above 0.9), in float64.

    Args:
        {_KEY_DOC}
        lam: real array or scalar, finite, ``>= 0``, broadcasting to ``shape``.
        shape: output shape.
        dtype: an integer dtype (a numpy dtype).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: ``lam < 0``, infinite or NaN somewhere (when run).

    Example:
        >>> from fgrad.ops.random import random_poisson
        >>> random_poisson(fgrad.random.key(0), 3.0, shape=(5,), dtype=np.dtype("int64"))
        Tensor([3, 2, 6, 3, 4], dtype=int64)

    References:
        W. Hormann, "The transformed rejection method for generating Poisson random
        variables", Insurance: Mathematics and Economics 12(1), 39-45, 1993.
    """,
)


def _binomial_kernel(xp, key, n_trials, p, *, shape, dtype):
    count = _as(xp, n_trials, np.float64)
    prob = _as(xp, p, np.float64)
    if not bool(xp.all((count >= 0.0) & (count < math.inf) & (count == xp.floor(count)))):
        raise ValueError("random.binomial: needs n a finite non-negative integer everywhere")
    if not bool(xp.all((prob >= 0.0) & (prob <= 1.0))):
        raise ValueError("random.binomial: needs 0 <= p <= 1 everywhere (and no NaN)")
    kd, kb = _keys(xp, key)
    size, full = _size(shape), (*kb, *shape)
    count = xp.reshape(xp.broadcast_to(count, full), (-1,))
    prob = xp.reshape(xp.broadcast_to(prob, full), (-1,))
    f64 = np.dtype(np.float64)
    flip = prob > 0.5
    q = xp.where(flip, 1.0 - prob, prob)  # min(p, 1 - p): draw the rarer outcome
    small = count * q < _INVERSION_BELOW
    # inversion: pmf(k) = pmf(k - 1) (n - k + 1) / k * q / (1 - q)
    qs = xp.where(small, q, 0.0)
    ns = xp.where(small, count, 0.0)
    odds = qs / (1.0 - qs)
    u = xp.reshape(_unit(xp, _subkey(xp, kd, 0), size, f64), (-1,))
    first = xp.exp(ns * xp.log1p(-qs))
    k_small = _inversion(xp, u, first, lambda k: (ns - k + 1.0) / k * odds, ns)
    # BTRS for n q >= 10 (Hormann 1993)
    nl = xp.where(small, 40.0, count)
    ql = xp.where(small, 0.5, q)
    spq = xp.sqrt(nl * ql * (1.0 - ql))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * ql
    c = nl * ql + 0.5
    vr = 0.92 - 4.2 / b
    log_alpha = xp.log((2.83 + 5.1 / b) * spq)
    log_odds = xp.log(ql / (1.0 - ql))
    mode = xp.floor((nl + 1.0) * ql)
    h = _gammaln64(xp, mode + 1.0) + _gammaln64(xp, nl - mode + 1.0)

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        at = _picker(xp, idx, size)
        uu = xp.reshape(_unit(xp, _subkey(xp, kr, 0), idx, f64, open_=True), (-1,)) - 0.5
        v = xp.reshape(_unit(xp, _subkey(xp, kr, 1), idx, f64, open_=True), (-1,))
        us = 0.5 - xp.abs(uu)
        aa, bb, nn = at(a), at(b), at(nl)
        k = xp.floor((2.0 * aa / us + bb) * uu + at(c))
        inside = (k >= 0.0) & (k <= nn)
        kc = xp.clip(k, 0.0, nn)
        quick = (us >= 0.07) & (v <= at(vr))
        lv = xp.log(v) + at(log_alpha) - xp.log(aa / (us * us) + bb)
        bound = (
            at(h)
            - _gammaln64(xp, kc + 1.0)
            - _gammaln64(xp, nn - kc + 1.0)
            + (kc - at(mode)) * at(log_odds)
        )
        return kc, (inside & (quick | (lv <= bound))) | at(small)

    k_large = _rejection(xp, _subkey(xp, kd, 1), size, propose, "binomial")
    k = xp.where(small, k_small, k_large)
    out = xp.where(flip, count - k, k)
    return xp.reshape(xp.astype(out, _xdt(xp, dtype)), full)


random_binomial = defop(
    "random_binomial",
    batch=_key_batch,
    kernel=_binomial_kernel,
    aval=_sampler_aval("random_binomial", "n", "p"),
    nondiff=True,
    check=Check(
        shapes=(((2,), (), ()), ((2,), (3,), ()), ((2, 2), (2, 1), (3,))),
        params=(
            {"shape": (3,), "dtype": np.dtype(np.float64)},
            {"shape": (2, 3), "dtype": np.dtype(np.float32)},
        ),
        make_args=_key_args(
            lambda rng, s: rng.integers(0, 60, s), lambda rng, s: rng.uniform(0.0, 1.0, s)
        ),
        strict=False,  # rejection rounds write accepted values back by integer-array assignment
    ),
    doc=f"""Binomial(n, p) counts: inversion for ``n min(p, 1-p) < 10``, BTRS rejection above.

    The op behind :func:`fgrad.random.binomial`: draws the count of the rarer outcome
    (``min(p, 1 - p)``) and reflects; inversion reads one uniform of sub-stream 0, BTRS
    (Hormann 1993) pairs of uniforms of sub-stream 1 in rejection rounds, in float64.

    Args:
        {_KEY_DOC}
        n: real array or scalar of non-negative integers (trials), broadcasting to ``shape``.
        p: real array or scalar in ``[0, 1]``, broadcasting to ``shape``.
        shape: output shape.
        dtype: float16, float32 or float64 (a numpy dtype; counts as floats, as JAX).

    Returns:
        Tensor of ``shape`` and ``dtype``, integer values in ``[0, n]``.

    Raises:
        ValueError: ``n`` not a finite non-negative integer, or ``p`` outside ``[0, 1]``
            (when run).

    Example:
        >>> from fgrad.ops.random import random_binomial
        >>> random_binomial(fgrad.random.key(0), 10, 0.3, shape=(5,), dtype=np.dtype("float64"))
        Tensor([3., 2., 5., 3., 4.], dtype=float64)

    References:
        W. Hormann, "The generation of binomial random variates", Journal of Statistical
        Computation and Simulation 46(1-2), 101-110, 1993 (BTRS).
    """,
)
