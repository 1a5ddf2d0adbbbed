"""Explicit random keys and samplers: ``from fgrad import random``.

There is no hidden global state. A *key* is a ``(2,)`` uint32 Tensor (JAX's raw key layout)
made by :func:`key`; :func:`split` and :func:`fold_in` derive new keys from it, and each
sampler turns a key into numbers. The same key always gives the same numbers, in any
process, in any call order, on numpy and on cupy.

The generator is counter-based: Threefry-2x32 with 20 rounds (Salmon et al., SC 2011) hashes
the key together with a 64-bit counter into 64 random bits, using only uint32 adds, rotations
and xors through the array namespace ``xp``. The top two bits of the counter say what the
block is for, so the streams of one key never overlap:

========  ==========================================  =====================================
tag       counter ``(hi, lo)``                        used by
========  ==========================================  =====================================
``0``     ``(i >> 32, i & 0xffffffff)``               element ``i`` of :func:`bits` et al.
``1``     ``(0x40000000 | i >> 32, i & 0xffffffff)``  ``split(key, num)[i]``
``2``     ``(0x80000000, data)``                      ``fold_in(key, data)``
``3``     ``(0xC0000000, j)``                         sub-stream ``j`` inside a sampler
========  ==========================================  =====================================

A 64-bit draw takes block ``i`` for element ``i``; a 32-bit draw takes word ``i % 2`` of block
``i // 2``. So element ``i`` of a sample depends only on the key and ``i`` (its flat C-order
index): ``uniform(k, (10,))[:4]`` equals ``uniform(k, (4,))``.

Samplers are not registry ops and have no derivatives: they compute on concrete arrays and
return Tensors. Reparameterise to differentiate, e.g. ``mu + sigma * normal(key, shape)``.

References:
    J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy as
    1, 2, 3", SC 2011 (Threefry). The JAX PRNG design note (jax/docs/jep/263-prng.md):
    splittable keys hashed by Threefry.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np  # dtypes, limits and shape arithmetic only; arrays go through xp

from fgrad import backend
from fgrad.core.trace import Tracer, concrete_value
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import Tensor, _wrap

__all__ = [
    "bernoulli",
    "bits",
    "categorical",
    "fold_in",
    "key",
    "normal",
    "permutation",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
]

# Threefry-2x32 rotation constants R_{0..7} and the key-schedule parity constant
# (Salmon et al. 2011; Random123's threefry.h, whose known answers tests/test_random.py checks).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
_MASK32 = 0xFFFFFFFF
_TAG_BITS, _TAG_SPLIT, _TAG_FOLD, _TAG_SUB = 0, 1, 2, 3
_MAX_ROUNDS = 200  # rejection rounds; every sampler here accepts with probability >= 0.45


# --------------------------------------------------------------------------- Threefry core


def _threefry2x32(xp: Any, k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32-20 of counters ``(x0, x1)`` under key ``(k0, k1)``; uint32 arrays.

    Keys have shape ``(1,)`` (1-d so that numpy never computes on scalars, which warn on
    wrap-around); counters have shape ``(n,)``. Returns two ``(n,)`` uint32 arrays.
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
    """Threefry blocks of key data ``kd`` at flat indices ``idx`` of stream ``tag``."""
    return _threefry2x32(xp, kd[0:1], kd[1:2], *_counters(xp, idx, tag))


def _subkey(xp: Any, kd: Any, j: int) -> Any:
    """Key data of sub-stream ``j`` of ``kd`` (for samplers that need several streams)."""
    y0, y1 = _threefry2x32(
        xp,
        kd[0:1],
        kd[1:2],
        xp.asarray([_TAG_SUB << 30], dtype=xp.uint32),
        xp.asarray([j], dtype=xp.uint32),
    )
    return xp.reshape(xp.stack([y0, y1], axis=1), (2,))


def _bits32(xp: Any, kd: Any, n: int) -> Any:
    """``n`` random uint32 words: element ``i`` is word ``i % 2`` of block ``i // 2``."""
    y0, y1 = _hash(xp, kd, (n + 1) // 2, _TAG_BITS)
    return xp.reshape(xp.stack([y0, y1], axis=1), (-1,))[:n]


def _bits64(xp: Any, kd: Any, idx: Any) -> Any:
    """Random uint64 values at flat indices ``idx`` (int: ``arange(idx)``): block ``i``."""
    y0, y1 = _hash(xp, kd, idx, _TAG_BITS)
    return (xp.astype(y0, xp.uint64) << 32) | xp.astype(y1, xp.uint64)


# Random mantissa bits per float dtype: float64 takes them from 64-bit draws, others from 32.
_MANTISSA = {np.dtype(np.float16): 10, np.dtype(np.float32): 23, np.dtype(np.float64): 52}


def _unit(xp: Any, kd: Any, idx: Any, dtype: np.dtype, *, open_: bool = False) -> Any:
    """Uniform floats ``m * 2**-p`` in ``[0, 1)`` from the top ``p`` mantissa bits.

    With ``open_``, ``(m + 0.5) * 2**-p`` in ``(0, 1)``: the same lattice shifted by half a
    step, symmetric about 1/2 and never 0 or 1 (for logarithms). Both are exact in ``dtype``
    (``m + 0.5`` needs ``p + 1`` significant bits, which every IEEE format has).
    ``idx``: an int ``n`` (elements ``0..n-1``), or an int64 index array (float64 only).
    """
    p = _MANTISSA[dtype]
    if p > 23:
        m = _bits64(xp, kd, idx) >> (64 - p)
    else:
        m = _bits32(xp, kd, idx) >> (32 - p)
    u = xp.astype(m, _xdt(xp, dtype))
    if open_:
        u = u + 0.5
    return u * (2.0**-p)


def _normal_flat(xp: Any, kd: Any, n: int, dtype: np.dtype) -> Any:
    """``n`` standard normals by Box-Muller: ``sqrt(-2 log u1) cos(2 pi u2)``."""
    u1 = _unit(xp, _subkey(xp, kd, 0), n, dtype, open_=True)
    u2 = _unit(xp, _subkey(xp, kd, 1), n, dtype)
    return xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2)


# --------------------------------------------------------------------------- argument checks


def _xdt(xp: Any, dtype: Any) -> Any:
    """The namespace's own dtype object for a numpy dtype (array_api_strict has its own)."""
    return getattr(xp, np.dtype(dtype).name)


def _key_data(key: Any, fn: str) -> tuple[Any, Any]:
    """The backend array of a key and its namespace; raise a clear error for anything else."""
    if isinstance(key, Tracer):
        raise TypeError(
            f"random.{fn}: the key is a traced value {key.aval}; keys must be concrete. "
            "Make and split keys outside grad/vjp/jvp/jit, and pass the key to the "
            "transformed function as an argument that is not differentiated (argnums)"
        )
    if isinstance(key, Tensor):
        data = key._data
    elif isinstance(key, (bool, int, float)) or not hasattr(key, "shape"):
        raise TypeError(
            f"random.{fn}: expected a key made by fgrad.random.key(seed), got "
            f"{type(key).__name__} {key!r}; write random.{fn}(random.key({key!r}), ...)"
            if isinstance(key, int)
            else f"random.{fn}: expected a key made by fgrad.random.key(seed), got "
            f"{type(key).__name__}"
        )
    else:
        data = key
    xp = backend.namespace_of(data)
    if data.dtype != xp.uint32:
        raise TypeError(
            f"random.{fn}: a key is a uint32 Tensor of shape (2,), got dtype {data.dtype}; "
            "make keys with fgrad.random.key(seed)"
        )
    if tuple(data.shape) != (2,):
        hint = (
            "; split returns a batch of keys: unpack it (k1, k2 = random.split(key)) or "
            "index one key (keys[0])"
            if len(data.shape) >= 2 and data.shape[-1] == 2
            else ""
        )
        raise ShapeError(f"random.{fn}: a key has shape (2,), got {tuple(data.shape)}{hint}")
    return data, xp


def _is_int_scalar(value: Any) -> bool:
    """A Python int or a 0-d integer array (bools excluded)."""
    if isinstance(value, int):
        return not isinstance(value, bool)
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    return kind in ("i", "u") and len(getattr(value, "shape", (0,))) == 0


def _shape(shape: Any, fn: str) -> tuple[int, ...]:
    """Canonical shape tuple; an int ``n`` means ``(n,)``."""
    if isinstance(shape, Tensor):
        raise TypeError(f"random.{fn}: shape must be a tuple of ints, got a Tensor")
    try:
        dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
        out = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"random.{fn}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"random.{fn}: shape {out} has a negative dimension")
    return out


def _float_dtype(dtype: Any, fn: str, *, complex_ok: bool = False) -> np.dtype:
    dt = np.dtype(dtype)
    if dt in _MANTISSA or (complex_ok and dt in (np.complex64, np.complex128)):
        return dt
    kinds = "float16, float32, float64" + (", complex64, complex128" if complex_ok else "")
    raise DTypeError(f"random.{fn}: dtype must be one of {kinds}; got {dt}")


def _param(xp: Any, kd: Any, value: Any, fn: str, name: str, dtype: Any, *, traced: str) -> Any:
    """A sampler parameter as an ``xp`` array of ``dtype`` on the key's device.

    ``traced="read"``: a tracer is read for its concrete value (fine for discrete samplers,
    whose integer/bool outputs have no derivative). ``traced="error"``: raise, since dropping
    the tangent of a continuous output would be silently wrong.
    """
    if isinstance(value, Tracer):
        if traced == "error":
            raise TypeError(
                f"random.{fn}: {name} is a traced value {value.aval}; fgrad.random samplers "
                f"have no derivatives. Pass a concrete {name}, or reparameterise: for example "
                "minval + (maxval - minval) * random.uniform(key, shape) is differentiable"
            )
        value = concrete_value(value)
    elif isinstance(value, Tensor):
        value = value._data
    if isinstance(value, (np.ndarray, np.generic)) or not hasattr(value, "shape"):
        value = np.asarray(value)
    elif backend.namespace_of(value) is not xp:
        value = backend.to_device(value, backend.device_of(kd))
    kind = getattr(value.dtype, "kind", "f")  # array_api_strict dtypes have no kind
    if kind not in "biuf":
        raise DTypeError(f"random.{fn}: {name} must be real numbers, got dtype {value.dtype}")
    if isinstance(value, np.ndarray) and xp is not np:
        device = backend.device_of(kd)
        value = backend.to_device(value, device) if device != backend.CPU else xp.asarray(value)
    return xp.astype(value, _xdt(xp, dtype))


def _broadcast_shape(
    fn: str, shape: Any, none_ok: bool = True, **shapes: tuple[int, ...]
) -> tuple[int, ...]:
    """``shape`` (or, when None, the parameters' broadcast shape), checked against them."""
    shapes = {name: tuple(s) for name, s in shapes.items()}
    try:
        joint = np.broadcast_shapes(*shapes.values())
    except ValueError:
        raise ShapeError(
            f"random.{fn}: the shapes of "
            + ", ".join(f"{n}={s}" for n, s in shapes.items())
            + " do not broadcast"
        ) from None
    if shape is None:
        return tuple(joint)
    shape = _shape(shape, fn)
    try:
        ok = np.broadcast_shapes(shape, joint) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ShapeError(
            f"random.{fn}: shape={shape} cannot hold "
            + ", ".join(f"{n}.shape={s}" for n, s in shapes.items())
            + f" (they must broadcast to shape); use shape={tuple(joint)}"
            + (" or shape=None" if none_ok else "")
        )
    return shape


def _out(xp: Any, flat: Any, shape: tuple[int, ...]) -> Tensor:
    return _wrap(xp.reshape(xp.asarray(flat), shape))


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# --------------------------------------------------------------------------- keys


def key(seed: int, *, device: Any = None) -> Tensor:
    """A new random key from an integer seed.

    The key is JAX's raw key layout: the seed's 64 bits as two uint32 words, high word first
    (``key(42)`` is ``[0, 42]``; negative seeds are taken modulo ``2**64``).

    Args:
        seed: Python int (or integer scalar) in ``[-2**63, 2**64)``.
        device: ``"cpu"`` (default), ``"cuda"``/``"cuda:N"`` or a Device: where the key and
            every sample drawn from it live.

    Returns:
        ``(2,)`` uint32 Tensor.

    Raises:
        TypeError: ``seed`` is not an integer (a float, a bool, a traced value).
        ValueError: ``seed`` is outside ``[-2**63, 2**64)``; unknown device.

    Example:
        >>> from fgrad import random
        >>> random.key(42)
        Tensor([ 0, 42], dtype=uint32)
        >>> random.key(-1)
        Tensor([4294967295, 4294967295], dtype=uint32)

    References:
        JAX PRNG design note (jax/docs/jep/263-prng.md); ``jax.random.PRNGKey``.
    """
    if isinstance(seed, Tracer):
        raise TypeError(f"random.key: the seed is a traced value {seed.aval}; pass a Python int")
    if isinstance(seed, Tensor):
        seed = seed._data
    if not _is_int_scalar(seed):
        raise TypeError(f"random.key: seed must be an integer, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"random.key: seed {seed} is outside [-2**63, 2**64)")
    seed %= 2**64
    words = np.array([seed >> 32, seed & _MASK32], dtype=np.uint32)
    return _wrap(backend.asarray_on(words, backend.get_device(device)))


def split(key: Any, num: int | tuple[int, ...] = 2) -> Tensor:
    """Split a key into ``num`` new, independent keys.

    Key ``i`` is Threefry of ``key`` at counter ``(0x40000000, i)`` (stream tag 1), so the
    new keys are distinct from each other, from :func:`fold_in` keys and from the counters
    samplers read. After a split, use the new keys and retire ``key``.

    Args:
        key: ``(2,)`` uint32 key.
        num: number of keys, or a shape tuple for a batch of keys.

    Returns:
        ``(num, 2)`` (or ``(*num, 2)``) uint32 Tensor on the key's device.

    Raises:
        TypeError: ``key`` is not a key (wrong type or dtype, or a traced value).
        ShapeError: ``key`` does not have shape ``(2,)``.
        ValueError: ``num`` is negative.

    Example:
        >>> from fgrad import random
        >>> random.split(random.key(0))
        Tensor([[1829400328,  293482607],
                [1481517927, 1506781092]], dtype=uint32)
        >>> random.split(random.key(0), 3).shape
        (3, 2)

    References:
        JAX PRNG design note (jax/docs/jep/263-prng.md), "split"; Salmon et al., SC 2011.
    """
    kd, xp = _key_data(key, "split")
    shape = _shape(num, "split")
    y0, y1 = _hash(xp, kd, _size(shape), _TAG_SPLIT)
    return _wrap(xp.reshape(xp.stack([y0, y1], axis=1), (*shape, 2)))


def fold_in(key: Any, data: int) -> Tensor:
    """A new key from ``key`` and a 32-bit integer, e.g. a step or layer index.

    ``fold_in(key, d)`` is Threefry of ``key`` at counter ``(0x80000000, d mod 2**32)``
    (stream tag 2): different ``data`` give independent keys, and none equals the parent or
    a :func:`split` key.

    Args:
        key: ``(2,)`` uint32 key.
        data: integer in ``[-2**31, 2**32)`` (negative values wrap modulo ``2**32``).

    Returns:
        ``(2,)`` uint32 Tensor.

    Raises:
        TypeError: ``key`` is not a key, or ``data`` is not a concrete integer.
        ShapeError: ``key`` does not have shape ``(2,)``.
        ValueError: ``data`` is outside ``[-2**31, 2**32)``.

    Example:
        >>> from fgrad import random
        >>> random.fold_in(random.key(0), 7)
        Tensor([1271512482,  634407644], dtype=uint32)

    References:
        JAX PRNG design note (jax/docs/jep/263-prng.md), "fold_in".
    """
    kd, xp = _key_data(key, "fold_in")
    if isinstance(data, Tracer):
        raise TypeError(f"random.fold_in: data is a traced value {data.aval}; pass a Python int")
    if isinstance(data, Tensor):
        data = data._data
    if not _is_int_scalar(data):
        raise TypeError(f"random.fold_in: data must be an integer, got {type(data).__name__}")
    data = int(data)
    if not -(2**31) <= data < 2**32:
        raise ValueError(f"random.fold_in: data {data} is outside [-2**31, 2**32)")
    y0, y1 = _threefry2x32(
        xp,
        kd[0:1],
        kd[1:2],
        xp.asarray([_TAG_FOLD << 30], dtype=xp.uint32),
        xp.asarray([data % 2**32], dtype=xp.uint32),
    )
    return _wrap(xp.reshape(xp.stack([y0, y1], axis=1), (2,)))


# --------------------------------------------------------------------------- samplers


def bits(key: Any, shape: Any = (), dtype: Any = np.uint32) -> Tensor:
    """Uniformly random unsigned integers: every bit independent and fair.

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple).
        dtype: uint8, uint16, uint32 (default) or uint64. Narrow dtypes keep the top bits of
            32-bit words; uint64 takes one Threefry block per element.

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key; ``dtype`` is not an unsigned integer dtype.
        ShapeError: ``key`` does not have shape ``(2,)``.

    Example:
        >>> from fgrad import random
        >>> b = random.bits(random.key(0), (3,))
        >>> b
        Tensor([1797259609, 2579123966,  928981903], dtype=uint32)
        >>> [hex(w) for w in b.tolist()[:2]]  # Threefry-2x32-20, key (0, 0), counter (0, 0)
        ['0x6b200159', '0x99ba4efe']

    References:
        Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011.
    """
    kd, xp = _key_data(key, "bits")
    shape = _shape(shape, "bits")
    dt = np.dtype(dtype)
    if dt.kind != "u":
        raise DTypeError(f"random.bits: dtype must be uint8, uint16, uint32 or uint64; got {dt}")
    n = _size(shape)
    if dt.itemsize == 8:
        flat = _bits64(xp, kd, n)
    else:
        flat = _bits32(xp, kd, n)
        if dt.itemsize < 4:
            flat = xp.astype(flat >> (32 - 8 * dt.itemsize), _xdt(xp, dt))
    return _out(xp, flat, shape)


def uniform(
    key: Any, shape: Any = (), dtype: Any = np.float64, minval: Any = 0.0, maxval: Any = 1.0
) -> Tensor:
    """Uniform floats in ``[minval, maxval)``.

    ``u = m * 2**-p`` from the top ``p`` bits of the random words (``p`` = 52 for float64,
    from a 64-bit draw; 23 for float32 and 10 for float16, from 32-bit words), so ``u`` takes
    every multiple of ``2**-p`` in ``[0, 1)`` with equal probability; the result is
    ``minval + (maxval - minval) * u``, kept below ``maxval`` when rounding would reach it.

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple); ``minval`` and ``maxval`` broadcast to it.
        dtype: float16, float32 or float64 (default).
        minval: lower bound (inclusive), real scalar or array, finite.
        maxval: upper bound (exclusive), real scalar or array, finite, ``> minval``.

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key, or ``minval``/``maxval`` are traced (no derivatives:
            write ``minval + (maxval - minval) * uniform(key, shape)`` instead).
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: the bounds do not broadcast to ``shape``; ``key`` is not ``(2,)``.
        ValueError: ``minval >= maxval`` or a bound is not finite.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.uniform(random.key(0), (3,)), 4))
        [0.4185 0.2163 0.9653]
        >>> random.uniform(random.key(0), (2,), dtype="float32", minval=-1.0, maxval=1.0).dtype
        dtype('float32')

    References:
        Salmon et al., SC 2011; the mantissa construction as in ``jax.random.uniform``.
    """
    kd, xp = _key_data(key, "uniform")
    dt = _float_dtype(dtype, "uniform")
    lo = _param(xp, kd, minval, "uniform", "minval", dt, traced="error")
    hi = _param(xp, kd, maxval, "uniform", "maxval", dt, traced="error")
    shape = _broadcast_shape("uniform", shape, False, minval=lo.shape, maxval=hi.shape)
    if not bool(xp.all(xp.isfinite(lo)) and xp.all(xp.isfinite(hi)) and xp.all(lo < hi)):
        raise ValueError("random.uniform: needs finite bounds with minval < maxval")
    u = xp.reshape(_unit(xp, kd, _size(shape), dt), shape)
    out = xp.maximum(lo + (hi - lo) * u, lo)
    out = xp.where(out < hi, out, xp.nextafter(hi, lo))  # rounding may reach maxval
    return _out(xp, out, shape)


def normal(key: Any, shape: Any = (), dtype: Any = np.float64) -> Tensor:
    """Standard normal samples (mean 0, variance 1), by the Box-Muller transform.

    ``z = sqrt(-2 log u1) * cos(2 pi u2)`` with ``u1`` uniform on ``(0, 1)`` (half-step
    lattice, never 0) and ``u2`` uniform on ``[0, 1)``, each from its own sub-stream of
    ``key``. The transform is exact; the only departure from N(0, 1) is the lattice of
    ``u1``, which caps ``|z|`` at 8.57 for float64 (``u1 >= 2**-53``) and 5.77 for float32
    (``u1 >= 2**-24``; P(|Z| > 5.77) = 8e-9). float16 is computed in float32 and rounded.
    Complex dtypes draw real and imaginary parts independently, each with variance 1/2.

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple).
        dtype: float16, float32, float64 (default), complex64 or complex128.

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a floating or complex dtype.
        ShapeError: ``key`` does not have shape ``(2,)``.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.normal(random.key(0), (3,)), 4))
        [-1.1943  1.0607  0.367 ]

    References:
        G. E. P. Box, M. E. Muller, "A Note on the Generation of Random Normal Deviates",
        Ann. Math. Statist. 29(2), 1958.
    """
    kd, xp = _key_data(key, "normal")
    dt = _float_dtype(dtype, "normal", complex_ok=True)
    shape = _shape(shape, "normal")
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
    return _out(xp, flat, shape)


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None) -> Tensor:
    """Bernoulli samples: True with probability ``p``.

    Element ``i`` is ``w_i < p * 2**32`` for a uniform 32-bit word ``w_i``, so
    ``P(True) = ceil(p * 2**32) / 2**32``: ``p`` to within ``2**-32``, exactly 0 for
    ``p <= 0`` and exactly 1 for ``p >= 1``.

    Args:
        key: ``(2,)`` uint32 key.
        p: probability, real scalar or array (a traced ``p`` is read for its value: the
            output is boolean and has no derivative).
        shape: output shape; ``p`` broadcasts to it. None (default): ``p``'s shape.

    Returns:
        bool Tensor of ``shape``.

    Raises:
        TypeError: ``key`` is not a key.
        ShapeError: ``p`` does not broadcast to ``shape``; ``key`` is not ``(2,)``.

    Example:
        >>> from fgrad import random
        >>> random.bernoulli(random.key(0), 0.5, (4,))
        Tensor([ True, False,  True, False], dtype=bool)

    References:
        Salmon et al., SC 2011; ``jax.random.bernoulli``.
    """
    kd, xp = _key_data(key, "bernoulli")
    prob = _param(xp, kd, p, "bernoulli", "p", np.float64, traced="read")
    shape = _broadcast_shape("bernoulli", shape, p=prob.shape)
    w = xp.reshape(_bits32(xp, kd, _size(shape)), shape)
    return _out(xp, xp.astype(w, xp.float64) < prob * 4294967296.0, shape)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None) -> Tensor:
    """Samples of class indices with probabilities ``softmax(logits, axis)``.

    Gumbel-max: ``argmax(logits + g, axis)`` with ``g = -log(-log(u))`` standard Gumbel noise
    (``u`` uniform on the open interval ``(0, 1)``), computed in float64. Exact for any
    logits, including ``-inf`` (probability 0); no softmax is formed.

    Args:
        key: ``(2,)`` uint32 key.
        logits: ``(..., n_classes, ...)`` real Tensor of unnormalised log-probabilities (a
            traced value is read for its value: the output is an integer).
        axis: the axis of ``logits`` that indexes classes.
        shape: output shape; the batch shape of ``logits`` (its shape without ``axis``) must
            broadcast to it. None (default): that batch shape.

    Returns:
        int64 Tensor of ``shape``, values in ``[0, n_classes)``.

    Raises:
        TypeError: ``key`` is not a key; ``logits`` are not real numbers.
        ShapeError: ``logits`` has no axis ``axis``, or its batch shape does not broadcast
            to ``shape``.
        ValueError: ``n_classes`` is 0.

    Example:
        >>> from fgrad import random
        >>> logits = fnp.log(fnp.array([0.1, 0.2, 0.7]))
        >>> random.categorical(random.key(0), logits, shape=(6,))
        Tensor([2, 2, 2, 1, 1, 2], dtype=int64)

    References:
        E. J. Gumbel, "Statistical Theory of Extreme Values and Some Practical
        Applications", 1954; C. J. Maddison, D. Tarlow, T. Minka, "A* Sampling", NeurIPS 2014.
    """
    kd, xp = _key_data(key, "categorical")
    lg = _param(xp, kd, logits, "categorical", "logits", np.float64, traced="read")
    if not -lg.ndim <= axis < lg.ndim:
        raise ShapeError(
            f"random.categorical: logits of shape {tuple(lg.shape)} have no axis {axis}"
        )
    lg = xp.moveaxis(lg, axis, -1)
    n = lg.shape[-1]
    if n == 0:
        raise ValueError("random.categorical: logits have 0 classes along axis")
    shape = _broadcast_shape("categorical", shape, logits_batch=lg.shape[:-1])
    full = (*shape, n)
    u = xp.reshape(_unit(xp, kd, _size(full), np.dtype(np.float64), open_=True), full)
    gumbel = -xp.log(-xp.log(u))
    return _out(xp, xp.astype(xp.argmax(lg + gumbel, axis=-1), xp.int64), shape)


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = np.int64) -> Tensor:
    """Uniform random integers in ``[minval, maxval)``, exactly unbiased.

    With ``span = maxval - minval``, a 64-bit word ``w`` is accepted when
    ``w < 2**64 - (2**64 mod span)`` and gives ``minval + w mod span``; rejected elements are
    redrawn from fresh sub-streams. Every accepted residue is equally likely, so the result is
    exactly uniform; a redraw happens with probability ``(2**64 mod span) / 2**64``, below
    ``2**-32`` for spans up to ``2**32`` and at most 1/2 for any span.

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple); ``minval`` and ``maxval`` broadcast to it.
        minval: lowest value (inclusive), integer scalar or array, ``>=`` the dtype's min.
        maxval: bound (exclusive), integer scalar or array, ``> minval``, at most the
            dtype's max + 1. Both bounds must fit in int64; traced bounds are read for
            their values.
        dtype: an integer dtype (default int64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not an integer dtype, or the bounds are not integers.
        ShapeError: the bounds do not broadcast to ``shape``; ``key`` is not ``(2,)``.
        ValueError: ``minval >= maxval`` somewhere, or a bound outside the dtype's range
            or int64.

    Example:
        >>> from fgrad import random
        >>> random.randint(random.key(0), (5,), 0, 10)
        Tensor([2, 9, 1, 0, 2], dtype=int64)

    References:
        D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 29(1), 2019
        (the rejection threshold ``2**64 mod span``).
    """
    kd, xp = _key_data(key, "randint")
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise DTypeError(f"random.randint: dtype must be an integer dtype, got {dt}")
    bounds = []
    for name, value in (("minval", minval), ("maxval", maxval)):
        raw = concrete_value(value) if isinstance(value, Tensor) else value
        if hasattr(raw, "dtype") and str(raw.dtype)[:3] not in ("int", "uin", "boo"):
            raise DTypeError(f"random.randint: {name} must be integers, got dtype {raw.dtype}")
        if isinstance(raw, float):
            raise DTypeError(f"random.randint: {name} must be integers, got float {raw!r}")
        big = isinstance(raw, int) and not -(2**63) <= raw < 2**63
        if big or (getattr(raw, "dtype", None) == np.uint64 and bool((raw >= 2**63).any())):
            raise ValueError(f"random.randint: {name} must fit in int64")
        bounds.append(_param(xp, kd, value, "randint", name, np.int64, traced="read"))
    lo, hi = bounds
    shape = _broadcast_shape(
        "randint", _shape(shape, "randint"), False, minval=lo.shape, maxval=hi.shape
    )
    info = np.iinfo(dt)
    if not bool(xp.all(lo < hi)):
        raise ValueError("random.randint: needs minval < maxval everywhere")
    if not bool(xp.all(lo >= info.min) and xp.all(hi - 1 <= info.max)):
        raise ValueError(
            f"random.randint: bounds must lie in [{info.min}, {info.max + 1}] for dtype {dt}"
        )
    n = _size(shape)
    lo_u = xp.reshape(xp.astype(xp.broadcast_to(lo, shape), xp.uint64), (-1,))
    span = xp.reshape(xp.astype(xp.broadcast_to(hi, shape), xp.uint64), (-1,)) - lo_u
    # 2**64 mod span, as (2**64 - span) mod span in wrapping uint64 arithmetic.
    rem = (~span + 1) % span
    accept_max = ~rem  # 2**64 - 1 - rem: accepted words are w <= this

    def propose(kr: Any, idx: Any) -> tuple[Any, Any]:
        w = _bits64(xp, kr, idx)
        if isinstance(idx, int):
            return w % span, w <= accept_max
        return w % xp.take(span, idx), w <= xp.take(accept_max, idx)

    r = _rejection(xp, kd, n, propose, "randint")
    return _out(xp, xp.astype(lo_u + r, _xdt(xp, dt)), shape)


def _rejection(xp: Any, kd: Any, n: int, propose: Any, fn: str) -> Any:
    """Rejection sampling in rounds; element ``i`` depends only on the key and ``i``.

    Round ``r`` calls ``propose(key_r, idx)`` for the pending flat indices ``idx`` with
    sub-stream key ``key_r`` and keeps the accepted values.
    """
    idx = xp.arange(n, dtype=xp.int64)
    out = None
    for r in range(_MAX_ROUNDS):
        values, ok = propose(_subkey(xp, kd, r), idx if out is not None else n)
        if out is None:
            out = values
        else:
            out[idx[ok]] = values[ok]  # numpy/cupy advanced assignment on our own array
        idx = idx[~ok]
        if idx.shape[0] == 0:
            return out
    raise RuntimeError(f"random.{fn}: rejection sampling did not finish in {_MAX_ROUNDS} rounds")


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Tensor:
    """A random permutation of ``arange(x)``, or ``x`` shuffled along ``axis``.

    Sorts by random 64-bit keys (a stable sort, so ties keep their order). One round leaves a
    bias only through ties, of probability below ``n**2 / 2**65``; the number of rounds is
    ``ceil(3 log2(n) / 64)``, which keeps that below ``n**-1`` (one round for
    ``n < 2**21``). Each round re-sorts the previous result by fresh keys.

    Args:
        key: ``(2,)`` uint32 key.
        x: an int ``n`` (permute ``arange(n)``) or a Tensor/array with at least one axis.
        axis: the axis of ``x`` to shuffle.
        independent: if True, shuffle each 1-d slice along ``axis`` independently; if False
            (default), apply one permutation to the whole axis.

    Returns:
        int64 Tensor of shape ``(n,)`` for an int; otherwise a Tensor like ``x``.

    Raises:
        TypeError: ``key`` is not a key, or ``x`` is traced (shuffle a traced array as
            ``x[random.permutation(key, len(x))]``, which is differentiable).
        ValueError: ``x`` is a negative int or a 0-d array.

    Example:
        >>> from fgrad import random
        >>> random.permutation(random.key(0), 5)
        Tensor([1, 0, 3, 4, 2], dtype=int64)

    References:
        D. E. Knuth, TAOCP vol. 2, 3rd ed., section 3.4.2 (shuffling by sorting random keys).
    """
    kd, xp = _key_data(key, "permutation")
    if isinstance(x, Tracer):
        raise TypeError(
            f"random.permutation: x is a traced value {x.aval}; samplers have no derivatives. "
            "Shuffle it as x[random.permutation(key, len(x))], which is differentiable"
        )
    if isinstance(x, Tensor):
        x = x._data
    if _is_int_scalar(x):
        n = int(x)
        if n < 0:
            raise ValueError(f"random.permutation: x must be >= 0, got {n}")
        data = xp.arange(n, dtype=xp.int64)
        axis = 0
    else:
        if not hasattr(x, "shape"):
            x = np.asarray(x)
        if backend.namespace_of(x) is not xp:
            x = backend.to_device(x, backend.device_of(kd))
        data = xp.asarray(x)
        if data.ndim == 0:
            raise ValueError("random.permutation: x must be an int or have at least one axis")
        if not -data.ndim <= axis < data.ndim:
            raise ShapeError(
                f"random.permutation: x of shape {tuple(data.shape)} has no axis {axis}"
            )
        axis %= data.ndim
    n = data.shape[axis]
    rounds = max(1, math.ceil(3 * math.log2(max(n, 2)) / 64))
    if not independent:
        perm = xp.arange(n, dtype=xp.int64)
        for r in range(rounds):
            sort_keys = _bits64(xp, _subkey(xp, kd, r), n)
            perm = xp.take(perm, xp.argsort(sort_keys, kind="stable"))
        return _wrap(xp.take(data, perm, axis=axis))
    moved = xp.moveaxis(data, axis, -1)
    for r in range(rounds):
        sort_keys = xp.reshape(_bits64(xp, _subkey(xp, kd, r), _size(moved.shape)), moved.shape)
        moved = xp.take_along_axis(moved, xp.argsort(sort_keys, axis=-1, kind="stable"), axis=-1)
    return _wrap(xp.moveaxis(moved, -1, axis))


def truncated_normal(
    key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = np.float64
) -> Tensor:
    """Standard normal samples conditioned on ``lower <= z <= upper``.

    Exact rejection sampling (Robert 1995), computed in float64 and rounded to ``dtype``.
    Intervals with ``upper <= 0`` are mirrored to ``[-upper, -lower]``. Then per element:
    an interval around 0 of width ``>= sqrt(2 pi)`` proposes N(0, 1); a narrower one
    proposes uniformly and accepts with ``exp(-z**2 / 2)``; an interval ``[a, b]`` with
    ``a >= 0`` proposes uniformly (accept ``exp((a**2 - z**2) / 2)``) when
    ``b - a < exp((alpha - a)**2 / 2) / alpha``, else ``a + Exp(alpha)`` with
    ``alpha = (a + sqrt(a**2 + 4)) / 2`` (accept ``exp(-(z - alpha)**2 / 2)`` and ``z <= b``).
    Each proposal is accepted with probability above 0.45, so far tails such as
    ``[10, inf)`` cost no more than the bulk; rejected elements are redrawn in rounds.

    Args:
        key: ``(2,)`` uint32 key.
        lower: lower bound, real scalar or array; may be ``-inf``.
        upper: upper bound, real scalar or array, ``> lower``; may be ``inf``.
        shape: output shape; the bounds broadcast to it. None (default): their broadcast
            shape.
        dtype: float16, float32 or float64 (default).

    Returns:
        Tensor of ``shape`` and ``dtype``, every value in ``[lower, upper]``.

    Raises:
        TypeError: ``key`` is not a key; the bounds are traced (no derivatives).
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: the bounds do not broadcast to ``shape``; ``key`` is not ``(2,)``.
        ValueError: ``lower >= upper`` somewhere (or a bound is NaN).

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.truncated_normal(random.key(0), -1.0, 2.0, (3,)), 4))
        [-0.2595  0.6113  0.794 ]

    References:
        C. P. Robert, "Simulation of truncated normal variables", Statistics and Computing
        5(2), 121-125, 1995.
    """
    kd, xp = _key_data(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    lo = _param(xp, kd, lower, "truncated_normal", "lower", np.float64, traced="error")
    hi = _param(xp, kd, upper, "truncated_normal", "upper", np.float64, traced="error")
    shape = _broadcast_shape("truncated_normal", shape, lower=lo.shape, upper=hi.shape)
    if not bool(xp.all(lo < hi)):
        raise ValueError("random.truncated_normal: needs lower < upper everywhere (and no NaN)")
    n = _size(shape)
    lo = xp.reshape(xp.broadcast_to(lo, shape), (-1,))
    hi = xp.reshape(xp.broadcast_to(hi, shape), (-1,))
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
        u1 = _unit(xp, _subkey(xp, kr, 0), idx, one, open_=True)
        u2 = _unit(xp, _subkey(xp, kr, 1), idx, one, open_=True)
        whole = isinstance(idx, int)

        def at(v: Any) -> Any:
            return v if whole else xp.take(v, idx)

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
    return _out(xp, xp.astype(z, _xdt(xp, dt)), shape)
