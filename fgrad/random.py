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

Each function checks its arguments and calls ops of :mod:`fgrad.ops.random` (shapes and
dtypes are static, keys and parameters are data), so keys work inside :func:`fgrad.jit`
like any other array: a new key reuses the compiled graph. The distributions built on
:func:`gamma` (``beta``, ``dirichlet``, ``t``, ...) are differentiable in their parameters
through gamma's implicit reparameterisation gradient; the location-scale ones by
composition, e.g. ``mu + sigma * normal(key, shape)``; the other samplers' parameters have
no derivatives.

Example:
    >>> from fgrad import random
    >>> @fgrad.jit
    ... def noisy(x, key):
    ...     k1, k2 = random.split(key)
    ...     return x + random.normal(k1, x.shape) * random.uniform(k2, x.shape)
    >>> x = fnp.zeros(3)
    >>> bool(fnp.all(noisy(x, random.key(0)) == noisy(x, random.key(0))))
    True
    >>> noisy(x, random.key(1)).shape, noisy.cache_info().misses
    ((3,), 1)

References:
    J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy as
    1, 2, 3", SC 2011 (Threefry). The JAX PRNG design note (jax/docs/jep/263-prng.md):
    splittable keys hashed by Threefry.
"""

from __future__ import annotations

from typing import Any

import numpy as np  # dtypes, limits and shape arithmetic only; arrays go through the ops

from fgrad import _args, backend
from fgrad import numpy as fnp
from fgrad.core.trace import Tracer, concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.ops._rules import broadcasts_to, shape_of
from fgrad.ops.elementwise import stop_gradient
from fgrad.ops.random import (
    MANTISSA,
    no_derivative_message,
    random_bernoulli,
    random_binomial,
    random_bits,
    random_categorical,
    random_fold_in,
    random_gamma,
    random_normal,
    random_permutation,
    random_poisson,
    random_randint,
    random_split,
    random_truncated_normal,
    random_uniform,
)
from fgrad.tensor import Tensor, _wrap, device_arg
from fgrad.transforms.ad import JVPTracer, ReverseTracer

__all__ = [
    "PRNGKey",
    "ball",
    "bernoulli",
    "beta",
    "binomial",
    "bits",
    "categorical",
    "cauchy",
    "choice",
    "dirichlet",
    "exponential",
    "fold_in",
    "gamma",
    "generalized_normal",
    "geometric",
    "gumbel",
    "key",
    "laplace",
    "loggamma",
    "logistic",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "permutation",
    "poisson",
    "rademacher",
    "randint",
    "split",
    "t",
    "truncated_normal",
    "uniform",
]


def __dir__() -> list[str]:
    """Only the public names (the imports above are implementation details)."""
    return sorted(__all__)

_MASK32 = 0xFFFFFFFF
# Tracers that carry derivatives. A sampler has none, so a differentiated continuous
# parameter raises; jit's graph tracers carry no derivative and pass.
_AD_TRACERS = (ReverseTracer, JVPTracer)


# --------------------------------------------------------------------------- argument checks


def _name(dtype: Any) -> str:
    """A dtype's name, for numpy dtypes and Array API namespaces' own dtype objects."""
    return str(dtype).rsplit(".", 1)[-1]


def _key_data(key: Any, fn: str, where: str | None = None) -> tuple[Any, Any]:
    """The key as an op input and its device (None when traced); raise for anything else.

    Only the shape and dtype are checked, so a key traced by ``jit`` passes. Errors name
    ``random.{fn}``, or ``where`` (another public function that takes a key) when given.
    """
    if where is not None:
        try:
            return _key_data(key, fn)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{where}: key: {str(err).split(': ', 1)[-1]}") from None
    traced = isinstance(key, Tracer)
    if isinstance(key, (bool, int, float)) or not hasattr(key, "shape"):
        raise TypeError(
            f"random.{fn}: expected a key made by fgrad.random.key(seed), got "
            f"{type(key).__name__} {key!r}; write random.{fn}(random.key({key!r}), ...)"
            if isinstance(key, int)
            else f"random.{fn}: expected a key made by fgrad.random.key(seed), got "
            f"{type(key).__name__}"
        )
    if _name(key.dtype) != "uint32":
        if traced:
            raise TypeError(
                f"random.{fn}: the key is a traced value {key.aval}, not a uint32 key; keys "
                "have no derivatives. Make keys with fgrad.random.key(seed) and pass them to "
                "the transformed function as arguments that are not differentiated (argnums)"
            )
        raise TypeError(
            f"random.{fn}: a key is a uint32 Tensor of shape (2,), got dtype {key.dtype}; "
            "make keys with fgrad.random.key(seed)"
        )
    shape = tuple(key.shape)
    if shape != (2,):
        hint = (
            "; split returns a batch of keys: unpack it (k1, k2 = random.split(key)) or "
            "index one key (keys[0])"
            if len(shape) >= 2 and shape[-1] == 2
            else ""
        )
        raise ShapeError(f"random.{fn}: a key has shape (2,), got {shape}{hint}")
    if traced:
        return key, None
    return key, backend.device_of(key._data if isinstance(key, Tensor) else key)


def _numeric(data: Any, fn: str, arg: str) -> None:
    """Refuse an array of strings, objects or dates: samples are Tensors of numbers."""
    try:
        dt = np.dtype(data.dtype)
    except TypeError:  # an Array API namespace's own dtype object: numeric by construction
        return
    if not _args.is_numeric(dt):
        raise DTypeError(f"{fn}: {arg} must hold numbers, got an array of dtype {dt}")


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
        return _args.shape(shape, f"random.{fn}")
    except ShapeError as err:  # a negative size (numpy's ValueError) or beyond int64
        raise ValueError(str(err)) from None


def _dtype(dtype: Any, fn: str, default: Any) -> np.dtype:
    """``dtype`` as a numpy dtype, None meaning ``default``; DTypeError for anything else."""
    return _args.dtype(dtype, f"random.{fn}") or np.dtype(default)


def _int_dtype(dtype: Any, fn: str) -> np.dtype:
    """``dtype`` as an integer numpy dtype, None meaning int64 (the dtype of counts)."""
    dt = _dtype(dtype, fn, np.int64)
    if dt.kind not in "iu":
        raise DTypeError(f"random.{fn}: dtype must be an integer dtype, got {dt}")
    return dt


def _float_dtype(dtype: Any, fn: str, *, complex_ok: bool = False) -> np.dtype:
    dt = _dtype(dtype, fn, np.float64)
    if dt in MANTISSA or (complex_ok and dt in (np.complex64, np.complex128)):
        return dt
    kinds = "float16, float32, float64" + (", complex64, complex128" if complex_ok else "")
    raise DTypeError(f"random.{fn}: dtype must be one of {kinds}; got {dt}")


def _param(value: Any, device: Any, fn: str, name: str, *, traced: str) -> Any:
    """A sampler parameter as an op input: a tracer, a Python scalar, or a Tensor on the
    key's ``device`` (None when the key is traced).

    ``traced="read"``: a differentiated tracer is fine (discrete samplers: integer or bool
    outputs have no derivative). ``traced="error"``: raise for one, since dropping the
    derivative of a continuous output would be silently wrong. Tracers of ``jit`` pass.
    """
    if isinstance(value, Tracer):
        if traced == "error" and isinstance(value, _AD_TRACERS):
            raise TypeError(no_derivative_message(fn, name, f"a traced value {value.aval}"))
        dtype = value.dtype
    elif isinstance(value, (bool, int, float)):
        return value  # weakly typed; the kernel casts it
    else:
        data = value._data if isinstance(value, Tensor) else value
        if isinstance(data, np.generic) or not hasattr(data, "shape"):
            data = np.asarray(data)
        if device is not None and backend.device_of(data) != device:
            data = backend.to_device(data, device)
        value, dtype = _wrap(data), data.dtype
    if _name(dtype)[:3] not in ("boo", "int", "uin", "flo"):
        raise DTypeError(f"random.{fn}: {name} must be real numbers, got dtype {dtype}")
    return value


def _concrete(value: Any, dtype: Any) -> Any:
    """``value`` as a concrete array of ``dtype`` for checks, or None when ``jit`` traces it
    (its kernel checks the values when it runs)."""
    try:
        data = concrete_value(value)
    except ConcretizationError:
        return None
    if isinstance(data, (bool, int, float)) or not hasattr(data, "shape"):
        data = np.asarray(data)
    xp = backend.namespace_of(data)
    return xp.astype(data, getattr(xp, np.dtype(dtype).name))


def _all(cond: Any) -> bool:
    return bool(backend.namespace_of(cond).all(cond))


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
    if not broadcasts_to(joint, shape):
        raise ShapeError(
            f"random.{fn}: shape={shape} cannot hold "
            + ", ".join(f"{n}.shape={s}" for n, s in shapes.items())
            + f" (they must broadcast to shape); use shape={tuple(joint)}"
            + (" or shape=None" if none_ok else "")
        )
    return shape


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
    dev = device_arg(device, "random.key")
    if isinstance(seed, Tensor):
        seed = seed._data
    if not _is_int_scalar(seed):
        raise TypeError(f"random.key: seed must be an integer, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"random.key: seed {seed} is outside [-2**63, 2**64)")
    seed %= 2**64
    words = np.array([seed >> 32, seed & _MASK32], dtype=np.uint32)
    return _wrap(backend.asarray_on(words, dev))


PRNGKey = key  # JAX's name (jax.random.PRNGKey), as JAX users type it


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
        TypeError: ``key`` is not a key (wrong type or dtype).
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
    key, _ = _key_data(key, "split")
    return random_split(key, shape=_shape(num, "split"))


def fold_in(key: Any, data: int) -> Tensor:
    """A new key from ``key`` and a 32-bit integer, e.g. a step or layer index.

    ``fold_in(key, d)`` is Threefry of ``key`` at counter ``(0x80000000, d mod 2**32)``
    (stream tag 2): different ``data`` give independent keys, and none equals the parent or
    a :func:`split` key.

    Args:
        key: ``(2,)`` uint32 key.
        data: integer in ``[-2**31, 2**32)`` (negative values wrap modulo ``2**32``); under
            :func:`fgrad.jit` also a traced integer scalar, such as a step counter.

    Returns:
        ``(2,)`` uint32 Tensor.

    Raises:
        TypeError: ``key`` is not a key, or ``data`` is not an integer scalar.
        ShapeError: ``key`` does not have shape ``(2,)``.
        ValueError: ``data`` is outside ``[-2**31, 2**32)``.

    Example:
        >>> from fgrad import random
        >>> random.fold_in(random.key(0), 7)
        Tensor([1271512482,  634407644], dtype=uint32)

    References:
        JAX PRNG design note (jax/docs/jep/263-prng.md), "fold_in".
    """
    key, _ = _key_data(key, "fold_in")
    if isinstance(data, Tracer):  # traced by jit: its low 32 bits, when the graph runs
        if _name(data.dtype)[:3] not in ("int", "uin") or tuple(data.shape) != ():
            raise TypeError(f"random.fold_in: data must be an integer scalar, got {data.aval}")
        return random_fold_in(key, data)
    if isinstance(data, Tensor):
        data = data._data
    if not _is_int_scalar(data):
        raise TypeError(f"random.fold_in: data must be an integer, got {type(data).__name__}")
    data = int(data)
    if not -(2**31) <= data < 2**32:
        raise ValueError(f"random.fold_in: data {data} is outside [-2**31, 2**32)")
    return random_fold_in(key, data % 2**32)


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
    key, _ = _key_data(key, "bits")
    shape = _shape(shape, "bits")
    dt = _dtype(dtype, "bits", np.uint32)
    if dt.kind != "u":
        raise DTypeError(f"random.bits: dtype must be uint8, uint16, uint32 or uint64; got {dt}")
    return random_bits(key, shape=shape, dtype=dt)


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
        TypeError: ``key`` is not a key, or ``minval``/``maxval`` are differentiated (no
            derivatives: write ``minval + (maxval - minval) * uniform(key, shape)`` instead;
            bounds traced by :func:`fgrad.jit` alone are fine).
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: the bounds do not broadcast to ``shape``; ``key`` is not ``(2,)``.
        ValueError: ``minval >= maxval`` or a bound is not finite (for bounds traced by
            :func:`fgrad.jit`: when the compiled function runs).

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.uniform(random.key(0), (3,)), 4))
        [0.4185 0.2163 0.9653]
        >>> random.uniform(random.key(0), (2,), dtype="float32", minval=-1.0, maxval=1.0).dtype
        dtype('float32')

    References:
        Salmon et al., SC 2011; the mantissa construction as in ``jax.random.uniform``.
    """
    key, device = _key_data(key, "uniform")
    dt = _float_dtype(dtype, "uniform")
    lo = _param(minval, device, "uniform", "minval", traced="error")
    hi = _param(maxval, device, "uniform", "maxval", traced="error")
    shape = _broadcast_shape("uniform", shape, False, minval=shape_of(lo), maxval=shape_of(hi))
    clo, chi = _concrete(lo, dt), _concrete(hi, dt)
    if clo is not None and chi is not None:
        xp = backend.namespace_of(clo)
        if not (_all(xp.isfinite(clo)) and _all(xp.isfinite(chi)) and _all(clo < chi)):
            raise ValueError("random.uniform: needs finite bounds with minval < maxval")
    return random_uniform(key, lo, hi, shape=shape, dtype=dt)


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
    key, _ = _key_data(key, "normal")
    dt = _float_dtype(dtype, "normal", complex_ok=True)
    return random_normal(key, shape=_shape(shape, "normal"), dtype=dt)


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
    key, device = _key_data(key, "bernoulli")
    prob = _param(p, device, "bernoulli", "p", traced="read")
    shape = _broadcast_shape("bernoulli", shape, p=shape_of(prob))
    return random_bernoulli(key, prob, shape=shape)


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
    key, device = _key_data(key, "categorical")
    lg = _param(logits, device, "categorical", "logits", traced="read")
    lshape = shape_of(lg)
    axis = _args.index(axis, "random.categorical", "axis")
    if not -len(lshape) <= axis < len(lshape):
        raise ShapeError(f"random.categorical: logits of shape {lshape} have no axis {axis}")
    axis %= len(lshape)
    if lshape[axis] == 0:
        raise ValueError("random.categorical: logits have 0 classes along axis")
    batch = lshape[:axis] + lshape[axis + 1 :]
    shape = _broadcast_shape("categorical", shape, logits_batch=batch)
    return random_categorical(key, lg, axis=axis, shape=shape)


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
    key, device = _key_data(key, "randint")
    dt = _int_dtype(dtype, "randint")
    bounds = []
    for name, value in (("minval", minval), ("maxval", maxval)):
        if hasattr(value, "dtype") and _name(value.dtype)[:3] not in ("int", "uin", "boo"):
            raise DTypeError(f"random.randint: {name} must be integers, got dtype {value.dtype}")
        if isinstance(value, (float, complex)):
            raise DTypeError(f"random.randint: {name} must be integers, got float {value!r}")
        big = isinstance(value, int) and not -(2**63) <= value < 2**63
        if not isinstance(value, Tracer) and _name(getattr(value, "dtype", "")) == "uint64":
            big = big or not _all(concrete_value(value) < 2**63)
        if big:
            raise ValueError(f"random.randint: {name} must fit in int64")
        bounds.append(_param(value, device, "randint", name, traced="read"))
    lo, hi = bounds
    shape = _broadcast_shape(
        "randint", _shape(shape, "randint"), False, minval=shape_of(lo), maxval=shape_of(hi)
    )
    clo, chi = _concrete(lo, np.int64), _concrete(hi, np.int64)
    if clo is not None and chi is not None:
        info = np.iinfo(dt)
        if not _all(clo < chi):
            raise ValueError("random.randint: needs minval < maxval everywhere")
        if not (_all(clo >= info.min) and _all(chi - 1 <= info.max)):
            raise ValueError(
                f"random.randint: bounds must lie in [{info.min}, {info.max + 1}] for dtype {dt}"
            )
    return random_randint(key, lo, hi, shape=shape, dtype=dt)


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
        TypeError: ``key`` is not a key, ``x`` holds no numbers, ``axis`` is not an int
            or ``independent`` not a bool, or ``x`` is differentiated (shuffle it as
            ``x[random.permutation(key, len(x))]``, which is differentiable; an ``x`` traced
            by :func:`fgrad.jit` alone is fine), or ``x`` is a traced int.
        ValueError: ``x`` is a negative int or a 0-d array.

    Example:
        >>> from fgrad import random
        >>> random.permutation(random.key(0), 5)
        Tensor([1, 0, 3, 4, 2], dtype=int64)

    References:
        D. E. Knuth, TAOCP vol. 2, 3rd ed., section 3.4.2 (shuffling by sorting random keys).
    """
    key, device = _key_data(key, "permutation")
    axis = _args.index(axis, "random.permutation", "axis")
    independent = _args.flag(independent, "random.permutation", "independent")
    if isinstance(x, _AD_TRACERS):
        raise TypeError(
            f"random.permutation: x is a traced value {x.aval}; samplers have no derivatives. "
            "Shuffle it as x[random.permutation(key, len(x))], which is differentiable"
        )
    if isinstance(x, Tracer):  # traced by jit: shuffled by a gather in the graph
        if not x.shape:
            raise TypeError(
                f"random.permutation: x is a traced scalar {x.aval}; the length of a "
                "permutation must be static: pass a Python int (or mark it static in jit)"
            )
    else:
        raw = x._data if isinstance(x, Tensor) else x
        if _is_int_scalar(raw):
            n = _args.size(raw, "random.permutation", "x")
            return random_permutation(key, shape=(n,))
        if not hasattr(raw, "shape"):
            raw = np.asarray(raw)
        _numeric(raw, "random.permutation", "x")
        if device is not None and backend.device_of(raw) != device:
            raw = backend.to_device(raw, device)
        x = _wrap(raw)
        if not x.shape:
            raise ValueError("random.permutation: x must be an int or have at least one axis")
    ndim = len(x.shape)
    if not -ndim <= axis < ndim:
        raise ShapeError(f"random.permutation: x of shape {tuple(x.shape)} has no axis {axis}")
    axis %= ndim
    if not independent:
        return fnp.take(x, random_permutation(key, shape=(x.shape[axis],)), axis=axis)
    moved = fnp.moveaxis(x, axis, -1)
    order = random_permutation(key, shape=tuple(moved.shape))
    return fnp.moveaxis(fnp.take_along_axis(moved, order, axis=-1), -1, axis)


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
        TypeError: ``key`` is not a key; the bounds are differentiated (no derivatives;
            bounds traced by :func:`fgrad.jit` alone are fine).
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: the bounds do not broadcast to ``shape``; ``key`` is not ``(2,)``.
        ValueError: ``lower >= upper`` somewhere (or a bound is NaN); for bounds traced by
            :func:`fgrad.jit`, when the compiled function runs.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.truncated_normal(random.key(0), -1.0, 2.0, (3,)), 4))
        [-0.2595  0.6113  0.794 ]

    References:
        C. P. Robert, "Simulation of truncated normal variables", Statistics and Computing
        5(2), 121-125, 1995.
    """
    key, device = _key_data(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    lo = _param(lower, device, "truncated_normal", "lower", traced="error")
    hi = _param(upper, device, "truncated_normal", "upper", traced="error")
    shape = _broadcast_shape("truncated_normal", shape, lower=shape_of(lo), upper=shape_of(hi))
    clo, chi = _concrete(lo, np.float64), _concrete(hi, np.float64)
    if clo is not None and chi is not None and not _all(clo < chi):
        raise ValueError("random.truncated_normal: needs lower < upper everywhere (and no NaN)")
    return random_truncated_normal(key, lo, hi, shape=shape, dtype=dt)


def choice(
    key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0
) -> Tensor:
    """Random samples from ``arange(a)`` or from the entries of ``a`` along ``axis``
    (``jax.random.choice``).

    Built from the other samplers, as JAX does: uniform with replacement is
    :func:`randint`; uniform without replacement takes the first draws of a
    :func:`permutation`; with probabilities ``p`` and replacement, the inverse CDF
    (``searchsorted(cumsum(p), total * (1 - u))``); with ``p`` and without replacement, the
    Gumbel-top-k trick (the ``k`` largest ``log(p) + g`` for standard Gumbel noise ``g``,
    which draws exactly as sequential sampling proportional to ``p`` does). Shapes are
    static, so it works under :func:`fgrad.jit` (keys and ``p`` traced) and
    :func:`fgrad.vmap` (keys mapped). The result is differentiable in an array ``a`` (it
    is a gather from ``a``); the choice itself has no derivative.

    Args:
        key: ``(2,)`` uint32 key.
        a: a static int ``n`` (sample from ``arange(n)``), or a Tensor/array with at least
            one axis (sample its slices along ``axis``).
        shape: the shape of the draws (int or tuple).
        replace: with replacement (default) or without.
        p: None (uniform) or the ``(n,)`` non-negative weights of the ``n`` candidates; they
            need not sum to 1. Weights traced by :func:`fgrad.jit` are not checked.
        axis: the axis of an array ``a`` to sample along.

    Returns:
        int64 Tensor of ``shape`` for an int ``a``; otherwise a Tensor of ``a``'s dtype and
        shape ``a.shape[:axis] + shape + a.shape[axis + 1:]``.

    Raises:
        TypeError: ``key`` is not a key; ``a`` is not an int or an array of numbers (or
            is a traced int); ``replace`` is not a bool or ``axis`` not an int.
        ValueError: ``replace=False`` with more draws than candidates; ``a`` has no
            candidates (``n <= 0``) while draws are asked for; ``a`` is a 0-d array; ``p``
            does not have shape ``(n,)``, or has negative entries or a zero sum.
        ShapeError: ``axis`` is out of range for ``a``.

    Example:
        >>> from fgrad import random
        >>> random.choice(random.key(0), 5, (3,), replace=False)
        Tensor([1, 0, 3], dtype=int64)
        >>> random.choice(random.key(1), fnp.array([10.0, 20.0, 30.0]), (4,),
        ...               p=fnp.array([0.0, 0.5, 0.5]))
        Tensor([30., 30., 20., 20.], dtype=float64)

    References:
        W. Kool, H. van Hoof, M. Welling, "Stochastic Beams and Where to Find Them: The
        Gumbel-Top-k Trick for Sampling Sequences Without Replacement", ICML 2019.
    """
    key, device = _key_data(key, "choice")
    shape = _shape(shape, "choice")
    replace = _args.flag(replace, "random.choice", "replace")
    axis = _args.index(axis, "random.choice", "axis")
    n_draws = int(np.prod(shape, dtype=np.int64))
    arr = None
    if isinstance(a, Tracer) and not a.shape:
        raise TypeError(
            f"random.choice: a is a traced scalar {a.aval}; the number of candidates must be "
            "static: pass a Python int (or mark it static in jit)"
        )
    raw = a._data if isinstance(a, Tensor) and not isinstance(a, Tracer) else a
    if isinstance(raw, (bool, np.bool_)):
        raise TypeError(f"random.choice: a must be an int or an array, got {a!r}")
    if _is_int_scalar(raw):
        n = _args.index(raw, "random.choice", "a")
    elif isinstance(a, Tracer):
        arr = a
    else:
        if isinstance(raw, (float, complex)) or not (
            hasattr(raw, "shape") or isinstance(raw, (list, tuple))
        ):
            raise TypeError(
                f"random.choice: a must be an int or an array, got {type(a).__name__} {a!r}"
            )
        if not hasattr(raw, "shape"):
            raw = np.asarray(raw)
        _numeric(raw, "random.choice", "a")
        if device is not None and backend.device_of(raw) != device:
            raw = backend.to_device(raw, device)
        arr = a if isinstance(a, Tensor) else _wrap(raw)
        if not arr.shape:
            raise ValueError(
                "random.choice: a must be an int or have at least one axis, got a 0-d array"
            )
    if arr is not None:
        ndim = len(arr.shape)
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"random.choice: axis must be an int, got {axis!r}")
        if not -ndim <= axis < ndim:
            raise ShapeError(f"random.choice: a of shape {tuple(arr.shape)} has no axis {axis}")
        axis = int(axis) % ndim
        n = arr.shape[axis]
    if n_draws == 0:
        if arr is None:
            return fnp.zeros(shape, dtype=np.int64, device=device)
        out = arr.shape[:axis] + shape + arr.shape[axis + 1 :]
        return fnp.zeros(out, dtype=arr.dtype, device=device)
    if n <= 0:
        raise ValueError(
            f"random.choice: a must be greater than 0 unless no samples are taken; got {n} "
            f"candidates for {n_draws} draws (shape={shape})"
        )
    if not replace and n_draws > n:
        raise ValueError(
            f"random.choice: cannot take a larger sample (size {n_draws}, shape={shape}) than "
            f"the population (size {n}) when replace=False"
        )
    if p is None:
        if replace:
            ind = random_randint(key, 0, n, shape=shape, dtype=np.dtype(np.int64))
        else:
            ind = fnp.reshape(random_permutation(key, shape=(n,))[:n_draws], shape)
    else:
        prob = _param(p, device, "choice", "p", traced="read")
        if shape_of(prob) != (n,):
            raise ValueError(
                f"random.choice: p must be None or have shape ({n},) (one weight per "
                f"candidate), got shape {shape_of(prob)}"
            )
        if isinstance(prob, (bool, int, float)) or _name(prob.dtype)[:3] != "flo":
            prob = fnp.astype(prob, np.float64)
        cp = _concrete(prob, np.float64)
        if cp is not None and not (_all(cp >= 0) and bool(cp.sum() > 0)):
            raise ValueError(
                "random.choice: p must be non-negative with a positive sum (and no NaN)"
            )
        if replace:
            cdf = fnp.cumsum(prob)
            u = random_uniform(key, 0.0, 1.0, shape=shape, dtype=np.dtype(prob.dtype))
            # 1 - u lies in (0, 1], so the target lies in (0, total]: never past the end,
            # and never on a candidate of weight 0
            ind = fnp.searchsorted(cdf, cdf[-1] * (1.0 - u))
        else:
            tiny = float(np.finfo(np.dtype(prob.dtype)).tiny)
            u = random_uniform(key, tiny, 1.0, shape=(n,), dtype=np.dtype(prob.dtype))
            gumbel = -fnp.log(-fnp.log(u))
            positive = prob > 0
            logp = fnp.where(positive, fnp.log(fnp.where(positive, prob, 1.0)), -np.inf)
            ind = fnp.argsort(logp + gumbel, descending=True)[:n_draws]
            ind = fnp.reshape(ind, shape)
    if arr is None:
        return ind
    return fnp.take(arr, ind, axis=axis)


# --------------------------------------------------------------------------- distributions
#
# Continuous samplers built on uniform, normal and gamma are compositions of fgrad ops, so
# they are differentiable in their parameters wherever the maths is (gamma through its
# implicit gradient), and work under jit and vmap over keys like the ops they call.


def _float_setup(key: Any, shape: Any, dtype: Any, fn: str) -> tuple[Any, tuple, np.dtype]:
    """The checked key, shape tuple and real floating dtype of a parameterless sampler."""
    key, _ = _key_data(key, fn)
    return key, _shape(shape, fn), _float_dtype(dtype, fn)


def _gamma_draw(key: Any, a: Any, shape: Any, dtype: Any, fn: str, log_space: bool) -> Tensor:
    key, device = _key_data(key, fn)
    dt = _float_dtype(dtype, fn)
    alpha = _positive_param(a, device, fn, "a")
    shape = _broadcast_shape(fn, shape, a=shape_of(alpha))
    return random_gamma(key, alpha, shape=shape, dtype=dt, log_space=log_space)


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Gamma(a, 1) samples, differentiable in ``a`` by the implicit reparameterisation.

    Sampled by Marsaglia and Tsang's rejection method (with the boost
    ``Gamma(a) = Gamma(a + 1) u**(1/a)`` for ``a < 1``), in float64 and rounded to ``dtype``.
    The derivative of a sample ``x`` in ``a`` is that of ``F^-1(u; a)`` at a fixed ``u``,
    ``dx/da = -(dF/da)(x; a) / pdf(x; a)`` (Figurnov et al. 2018), as in JAX: so
    ``grad`` of an expectation estimated from samples is unbiased. For a rate ``beta``,
    divide: ``gamma(key, a) / beta``. Second derivatives raise TypeError (as in JAX).

    Args:
        key: ``(2,)`` uint32 key.
        a: concentration (shape parameter), real scalar or array, ``> 0``.
        shape: output shape; ``a`` broadcasts to it. None (default): ``a``'s shape.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``, values ``>= 0`` (0 only by underflow, for
        ``a`` below about 0.01; :func:`loggamma` keeps those).

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: ``a`` does not broadcast to ``shape``.
        ValueError: ``a <= 0`` or NaN somewhere (for a traced ``a``, when it runs).

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.gamma(random.key(0), 2.0, (3,)), 4))
        [4.0569 1.6936 0.9944]
        >>> # d E[x] / da = 1 for Gamma(a): the mean of the sample derivatives estimates it
        >>> g = fgrad.grad(lambda a: fnp.mean(random.gamma(random.key(1), a, (4000,))))(3.0)
        >>> print(round(float(g), 2))
        1.0

    References:
        G. Marsaglia, W. W. Tsang, "A Simple Method for Generating Gamma Variables", ACM
        TOMS 26(3), 2000; M. Figurnov, S. Mohamed, A. Mnih, "Implicit Reparameterization
        Gradients", NeurIPS 2018; ``jax.random.gamma``.
    """
    return _gamma_draw(key, a, shape, dtype, "gamma", False)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Logarithms of Gamma(a, 1) samples, computed in log space (no underflow for small ``a``).

    ``exp(loggamma(key, a))`` equals ``gamma(key, a)`` where that does not underflow; the
    derivative in ``a`` is the implicit one, ``d log x / da``.

    Args:
        key: ``(2,)`` uint32 key.
        a: concentration, real scalar or array, ``> 0``.
        shape: output shape; ``a`` broadcasts to it. None (default): ``a``'s shape.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError, DTypeError, ShapeError, ValueError: as :func:`gamma`.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.loggamma(random.key(0), 0.001, (3,)), 1))
        [ -567.2  -146.1 -2614.5]
        >>> random.gamma(random.key(0), 0.001, (3,))  # the same samples, underflowed
        Tensor([0., 0., 0.], dtype=float64)

    References:
        Marsaglia and Tsang 2000 (the boost for ``a < 1`` taken in logs); ``jax.random.loggamma``.
    """
    return _gamma_draw(key, a, shape, dtype, "loggamma", True)


def _normalised(log_x: Any, axis: int = -1) -> Any:
    """``exp(log_x) / sum(exp(log_x))`` along ``axis``, shifted by the maximum first (which
    cancels, so the derivatives are those of the unshifted ratio)."""
    shifted = fnp.exp(log_x - fnp.max(log_x, axis=axis, keepdims=True))
    return shifted / fnp.sum(shifted, axis=axis, keepdims=True)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Beta(a, b) samples, differentiable in ``a`` and ``b``.

    ``x / (x + y)`` for independent ``log x = loggamma(k1, a)`` and ``log y =
    loggamma(k2, b)`` (``k1, k2 = split(key)``), normalised in log space so that small
    concentrations do not give 0/0; the derivatives come through gamma's implicit ones.

    Args:
        key: ``(2,)`` uint32 key.
        a: first concentration, real scalar or array, ``> 0``.
        b: second concentration, real scalar or array, ``> 0``.
        shape: output shape; ``a`` and ``b`` broadcast to it. None: their broadcast shape.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``, values in ``[0, 1]``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: ``a`` and ``b`` do not broadcast to ``shape``.
        ValueError: ``a <= 0`` or ``b <= 0`` somewhere.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.beta(random.key(0), 2.0, 3.0, (3,)), 4))
        [0.2043 0.1492 0.6858]

    References:
        L. Devroye, "Non-Uniform Random Variate Generation", 1986, IX.4 (beta from two
        gammas); ``jax.random.beta``.
    """
    key, device = _key_data(key, "beta")
    dt = _float_dtype(dtype, "beta")
    pa = _param(a, device, "beta", "a", traced="read")
    pb = _param(b, device, "beta", "b", traced="read")
    shape = _broadcast_shape("beta", shape, a=shape_of(pa), b=shape_of(pb))
    ka, kb = random_split(key, shape=(2,))
    log_x = _gamma_draw(ka, pa, shape, dt, "beta", True)
    log_y = _gamma_draw(kb, pb, shape, dt, "beta", True)
    both = fnp.stack([log_x, log_y], axis=-1)
    return _normalised(both)[..., 0]


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Dirichlet(alpha) samples: points of the probability simplex, differentiable in ``alpha``.

    Independent ``log g_i = loggamma(key, alpha_i)``, normalised in log space,
    ``x_i = g_i / sum_j g_j``; the derivatives come through gamma's implicit ones.

    Args:
        key: ``(2,)`` uint32 key.
        alpha: ``(..., k)`` concentrations, real, ``> 0``, ``k >= 1``.
        shape: the batch shape of the samples; ``alpha.shape[:-1]`` broadcasts to it.
            None (default): ``alpha.shape[:-1]``.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of shape ``shape + (k,)`` and ``dtype``; each ``(k,)`` row sums to 1.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: ``alpha`` is a scalar, or its batch shape does not broadcast to ``shape``.
        ValueError: ``alpha <= 0`` somewhere, or ``k`` is 0.

    Example:
        >>> from fgrad import random
        >>> x = random.dirichlet(random.key(0), fnp.array([1.0, 2.0, 3.0]), (2,))
        >>> print(fnp.round(x, 3))
        [[0.414 0.285 0.301]
         [0.048 0.437 0.515]]
        >>> print(fnp.round(fnp.sum(x, axis=-1), 12))
        [1. 1.]

    References:
        L. Devroye, "Non-Uniform Random Variate Generation", 1986, XI.4 (normalised gammas);
        ``jax.random.dirichlet``.
    """
    key, device = _key_data(key, "dirichlet")
    dt = _float_dtype(dtype, "dirichlet")
    conc = _param(alpha, device, "dirichlet", "alpha", traced="read")
    ashape = shape_of(conc)
    if not ashape:
        raise ShapeError(
            "random.dirichlet: alpha must have at least one axis (its last axis indexes the "
            f"k categories), got shape {ashape}; for one category use fnp.ones"
        )
    if ashape[-1] == 0:
        raise ValueError(f"random.dirichlet: alpha has 0 categories (shape {ashape})")
    shape = _broadcast_shape("dirichlet", shape, alpha_batch=ashape[:-1])
    log_g = _gamma_draw(key, conc, (*shape, ashape[-1]), dt, "dirichlet", True)
    return _normalised(log_g)


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Poisson(lam) counts (integers, no derivative).

    Inversion of the CDF for ``lam < 10``; above, Hormann's transformed rejection with
    squeeze (PTRS), as JAX and numpy; exact up to float64 rounding of the CDF.

    Args:
        key: ``(2,)`` uint32 key.
        lam: rate, real scalar or array, finite, ``>= 0`` (a traced ``lam`` is read for its
            value: the counts have no derivative).
        shape: output shape; ``lam`` broadcasts to it. None (default): ``lam``'s shape.
        dtype: an integer dtype (None: int64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not an integer dtype.
        ShapeError: ``lam`` does not broadcast to ``shape``.
        ValueError: ``lam < 0``, infinite or NaN somewhere (traced: when it runs).

    Example:
        >>> from fgrad import random
        >>> random.poisson(random.key(0), fnp.array([0.5, 4.0, 300.0]))
        Tensor([  0,   3, 315], dtype=int64)

    References:
        W. Hormann, "The transformed rejection method for generating Poisson random
        variables", Insurance: Mathematics and Economics 12(1), 1993; ``jax.random.poisson``.
    """
    key, device = _key_data(key, "poisson")
    dt = _int_dtype(dtype, "poisson")
    rate = _param(lam, device, "poisson", "lam", traced="read")
    shape = _broadcast_shape("poisson", shape, lam=shape_of(rate))
    c = _concrete(rate, np.float64)
    if c is not None:
        xp = backend.namespace_of(c)
        if not _all((c >= 0) & xp.isfinite(c)):
            raise ValueError("random.poisson: needs a finite lam >= 0 everywhere (and no NaN)")
    return random_poisson(key, stop_gradient(rate), shape=shape, dtype=dt)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Binomial(n, p) counts, as floats (``jax.random.binomial``'s dtype), no derivative.

    Inversion for ``n min(p, 1-p) < 10``; above, Hormann's BTRS rejection; the count of the
    rarer outcome is drawn and reflected for ``p > 1/2``.

    Args:
        key: ``(2,)`` uint32 key.
        n: number of trials, real scalar or array of non-negative integers.
        p: success probability, real scalar or array in ``[0, 1]``.
        shape: output shape; ``n`` and ``p`` broadcast to it. None: their broadcast shape.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype`` holding integers in ``[0, n]``; constant in ``n``
        and ``p`` under differentiation (a count has no derivative).

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: ``n`` and ``p`` do not broadcast to ``shape``.
        ValueError: ``n`` not a non-negative integer, or ``p`` outside ``[0, 1]``.

    Example:
        >>> from fgrad import random
        >>> random.binomial(random.key(0), 20, fnp.array([0.1, 0.5, 0.9]))
        Tensor([ 2., 13., 16.], dtype=float64)

    References:
        W. Hormann, "The generation of binomial random variates", J. Statist. Comput.
        Simul. 46, 1993 (BTRS); ``jax.random.binomial``.
    """
    key, device = _key_data(key, "binomial")
    dt = _float_dtype(dtype, "binomial")
    count = _param(n, device, "binomial", "n", traced="read")
    prob = _param(p, device, "binomial", "p", traced="read")
    shape = _broadcast_shape("binomial", shape, n=shape_of(count), p=shape_of(prob))
    cn, cp = _concrete(count, np.float64), _concrete(prob, np.float64)
    if cn is not None:
        xp = backend.namespace_of(cn)
        if not _all((cn >= 0) & xp.isfinite(cn) & (cn == xp.floor(cn))):
            raise ValueError("random.binomial: needs n a finite non-negative integer everywhere")
    if cp is not None and not _all((cp >= 0) & (cp <= 1)):
        raise ValueError("random.binomial: needs 0 <= p <= 1 everywhere (and no NaN)")
    count, prob = stop_gradient(count), stop_gradient(prob)
    return random_binomial(key, count, prob, shape=shape, dtype=dt)


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Geometric(p) counts: the number of Bernoulli(p) trials up to the first success.

    ``floor(log(u) / log1p(-p)) + 1`` for ``u`` uniform on ``(0, 1)`` (inversion), as JAX;
    integers ``>= 1``, no derivative.

    Args:
        key: ``(2,)`` uint32 key.
        p: success probability, real scalar or array in ``(0, 1]``.
        shape: output shape; ``p`` broadcasts to it. None (default): ``p``'s shape.
        dtype: an integer dtype (None: int64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not an integer dtype.
        ShapeError: ``p`` does not broadcast to ``shape``.
        ValueError: ``p`` outside ``(0, 1]`` (concrete ``p``).

    Example:
        >>> from fgrad import random
        >>> random.geometric(random.key(0), 0.5, (6,))
        Tensor([2, 3, 1, 1, 1, 2], dtype=int64)

    References:
        L. Devroye, "Non-Uniform Random Variate Generation", 1986, X.2; ``jax.random.geometric``.
    """
    key, device = _key_data(key, "geometric")
    dt = _int_dtype(dtype, "geometric")
    prob = _param(p, device, "geometric", "p", traced="read")
    shape = _broadcast_shape("geometric", shape, p=shape_of(prob))
    cp = _concrete(prob, np.float64)
    if cp is not None and not _all((cp > 0) & (cp <= 1)):
        raise ValueError("random.geometric: needs 0 < p <= 1 everywhere (and no NaN)")
    f64 = np.dtype(np.float64)
    u = random_uniform(key, float(np.finfo(f64).tiny), 1.0, shape=shape, dtype=f64)
    prob = fnp.astype(stop_gradient(prob), np.float64)
    trials = fnp.floor(fnp.log(u) / fnp.log1p(-prob)) + 1.0
    return fnp.astype(fnp.where(prob == 1.0, 1.0, trials), dt)


_STANDARD_DOC = """{summary}

    {how}

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple).
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``{values}.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.{name}(random.key(0), (3,)), 4))
        {example}

    References:
        {references}
    """


def _standard(name: str, transform: Any, low: float | str | None, **doc: str) -> Any:
    """A parameterless sampler ``transform(u)`` of a uniform ``u`` on ``[low, 1)`` (``low``
    a float, or ``"tiny"``/``"eps"`` of the dtype's finfo, or ``"-1"``: just above -1),
    with its docstring from :data:`_STANDARD_DOC`."""

    def sampler(key: Any, shape: Any = (), dtype: Any = None) -> Tensor:
        key, shape, dt = _float_setup(key, shape, dtype, name)
        finfo = np.finfo(dt)
        lo = {"tiny": float(finfo.tiny), "eps": float(finfo.eps), "-1": -1.0 + float(finfo.epsneg)}
        u = random_uniform(key, lo.get(low, low), 1.0, shape=shape, dtype=dt)
        return transform(u)

    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = _STANDARD_DOC.format(name=name, **{"values": "", **doc})
    return sampler


exponential = _standard(
    "exponential",
    lambda u: -fnp.log1p(-u),
    0.0,
    summary="Standard exponential samples (rate 1): ``-log1p(-u)``, ``u`` uniform on ``[0, 1)``.",
    how="Inversion of the CDF ``1 - exp(-x)``; divide by a rate for other rates.",
    values=", values ``>= 0``",
    example="[0.5421 0.2437 3.3616]",
    references="``jax.random.exponential`` (the same inversion).",
)
laplace = _standard(
    "laplace",
    lambda u: -fnp.sign(u) * fnp.log1p(-fnp.abs(u)),
    "-1",
    summary="Standard Laplace samples (density ``exp(-|x|) / 2``): ``-sign(u) log1p(-|u|)``.",
    how="Inversion of the CDF at ``u`` uniform on ``(-1, 1)``.",
    example="[-0.178  -0.838   2.6685]",
    references="``jax.random.laplace`` (the same inversion).",
)
logistic = _standard(
    "logistic",
    lambda u: fnp.log(u) - fnp.log1p(-u),
    "tiny",
    summary="Standard logistic samples: ``log(u) - log1p(-u)``, the logit of a uniform.",
    how="Inversion of the CDF ``1 / (1 + exp(-x))`` at ``u`` uniform on ``(0, 1)``.",
    example="[-0.3291 -1.2874  3.3263]",
    references="``jax.random.logistic`` (the same inversion).",
)
cauchy = _standard(
    "cauchy",
    lambda u: fnp.tan(np.pi * (u - 0.5)),
    "eps",
    summary="Standard Cauchy samples: ``tan(pi (u - 1/2))`` for ``u`` uniform on ``(0, 1)``.",
    how="Inversion of the CDF ``1/2 + arctan(x) / pi``.",
    example="[-0.2619 -1.2378  9.1425]",
    references="``jax.random.cauchy`` (the same inversion).",
)
gumbel = _standard(
    "gumbel",
    lambda u: -fnp.log(-fnp.log(u)),
    "tiny",
    summary="Standard Gumbel samples (CDF ``exp(-exp(-x))``): ``-log(-log(u))``.",
    how="Inversion of the CDF at ``u`` uniform on ``(0, 1)``.",
    example="[ 0.1379 -0.426   3.344 ]",
    references=(
        'E. J. Gumbel, "Statistical Theory of Extreme Values and Some Practical\n'
        '        Applications", 1954; ``jax.random.gumbel``.'
    ),
)


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Tensor:
    """Student's t samples with ``df`` degrees of freedom, differentiable in ``df``.

    ``z sqrt((df / 2) / g)`` for a standard normal ``z`` and ``g = gamma(df / 2)`` (a
    chi-square over its degrees of freedom), from the two halves of ``split(key)``; the
    derivative in ``df`` comes through gamma's implicit one.

    Args:
        key: ``(2,)`` uint32 key.
        df: degrees of freedom, real scalar or array, ``> 0``.
        shape: output shape; ``df`` broadcasts to it. None (default): ``df``'s shape.
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype.
        ShapeError: ``df`` does not broadcast to ``shape``.
        ValueError: ``df <= 0`` somewhere.

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.t(random.key(0), 5.0, (3,)), 4))
        [0.7598 1.5008 0.1443]

    References:
        ``jax.random.t`` (the same construction).
    """
    key, device = _key_data(key, "t")
    dt = _float_dtype(dtype, "t")
    nu = _positive_param(df, device, "t", "df")
    shape = _broadcast_shape("t", shape, df=shape_of(nu))
    kn, kg = random_split(key, shape=(2,))
    z = random_normal(kn, shape=shape, dtype=dt)
    half = nu / 2.0 if isinstance(nu, Tensor) else _wrap(np.asarray(nu, np.float64) / 2.0)
    g = random_gamma(kg, half, shape=shape, dtype=dt, log_space=False)
    return z * fnp.astype(fnp.sqrt(half / g), dt)


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = None) -> Tensor:
    """Generalized normal samples, density ``p / (2 Gamma(1/p)) exp(-|x|**p)``,
    differentiable in ``p``.

    ``s g**(1/p)`` for a random sign ``s`` and ``g = gamma(1/p)``; ``p = 2`` gives
    N(0, 1/2), ``p = 1`` the Laplace distribution. The derivative in ``p`` comes through
    gamma's implicit one (as JAX), so ``p`` may be traced by ``grad``, ``jit`` or ``vmap``.

    Args:
        key: ``(2,)`` uint32 key.
        p: the exponent, a real scalar or array ``> 0`` that broadcasts to ``shape``.
        shape: output shape (int or tuple).
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype; ``p`` is not real numbers.
        ShapeError: ``p`` does not broadcast to ``shape``.
        ValueError: ``p <= 0`` or NaN somewhere (for a traced ``p``, when it runs).

    Example:
        >>> from fgrad import random
        >>> print(fnp.round(random.generalized_normal(random.key(0), 3.0, (3,)), 4))
        [ 1.2978  0.1894 -0.1584]
        >>> # d E[x^2] / dp = d/dp Gamma(3/p) / Gamma(1/p) = -0.1122 at p = 2.5
        >>> f = lambda p: fnp.mean(random.generalized_normal(random.key(0), p, (20000,)) ** 2)
        >>> print(round(float(fgrad.grad(f)(2.5)), 2))
        -0.11

    References:
        P. R. Tadikamalla, "Random sampling from the exponential power distribution",
        JASA 75, 1980; ``jax.random.generalized_normal``.
    """
    key, device = _key_data(key, "generalized_normal")
    dt = _float_dtype(dtype, "generalized_normal")
    power = _positive_param(p, device, "generalized_normal", "p")
    shape = _broadcast_shape("generalized_normal", _shape(shape, "generalized_normal"), p=shape_of(power))
    return _generalized_normal(key, power, shape, dt)


def _positive_param(value: Any, device: Any, fn: str, name: str) -> Any:
    """A continuous sampler parameter that may be traced (its derivative flows), checked
    ``> 0`` where its value is known."""
    value = _param(value, device, fn, name, traced="read")
    concrete = _concrete(value, np.float64)
    if concrete is not None and not _all(concrete > 0):
        raise ValueError(f"random.{fn}: needs {name} > 0 everywhere (and no NaN)")
    return value


def _generalized_normal(key: Any, power: Any, shape: tuple, dt: np.dtype) -> Tensor:
    """``s g**(1/p)``: the sampler of :func:`generalized_normal` on checked arguments."""
    ks, kg = random_split(key, shape=(2,))
    inv = 1.0 / power
    g = random_gamma(kg, inv, shape=shape, dtype=dt, log_space=False)
    sign = fnp.astype(random_bernoulli(ks, 0.5, shape=shape), dt) * 2.0 - 1.0
    return sign * g ** (fnp.astype(inv, dt) if isinstance(inv, Tensor) else inv)


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Tensor:
    """Rademacher samples: -1 or +1, each with probability 1/2.

    Args:
        key: ``(2,)`` uint32 key.
        shape: output shape (int or tuple).
        dtype: an integer or floating dtype (None: int64).

    Returns:
        Tensor of ``shape`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a signed integer or real floating dtype.

    Example:
        >>> from fgrad import random
        >>> random.rademacher(random.key(0), (6,))
        Tensor([ 1, -1,  1, -1, -1, -1], dtype=int64)

    References:
        ``jax.random.rademacher`` (``2 bernoulli(0.5) - 1``).
    """
    key, _ = _key_data(key, "rademacher")
    shape = _shape(shape, "rademacher")
    dt = _dtype(dtype, "rademacher", np.int64)
    if dt.kind not in "if":
        raise DTypeError(
            f"random.rademacher: dtype must be a signed integer or real floating dtype, got {dt}"
        )
    b = fnp.astype(random_bernoulli(key, 0.5, shape=shape), dt)
    return b * 2 - 1 if dt.kind == "i" else b * 2.0 - 1.0


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = None) -> Tensor:
    """Points uniform in the unit ``L_p`` ball of ``R^d``.

    ``g / (sum |g_i|**p + e)**(1/p)`` for ``d`` generalized normal coordinates ``g`` and
    a standard exponential ``e`` (Barthe, Guedon, Mendelson and Naor 2005), as JAX.

    Args:
        key: ``(2,)`` uint32 key.
        d: dimension, a positive Python int.
        p: the norm's exponent, a real scalar ``> 0`` (default 2, the Euclidean ball);
            it may be traced, and the points are differentiable in it (as JAX).
        shape: batch shape of the points (int or tuple).
        dtype: float16, float32 or float64 (None: float64).

    Returns:
        Tensor of shape ``shape + (d,)`` and ``dtype``; every row has ``L_p`` norm ``< 1``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not a real floating dtype; ``d`` is not an int or ``p``
            not a real number.
        ShapeError: ``p`` is not a scalar.
        ValueError: ``d < 1`` or ``p <= 0`` (for a traced ``p``, when it runs).

    Example:
        >>> from fgrad import random
        >>> x = random.ball(random.key(0), 3, shape=(4,))
        >>> x.shape, bool(fnp.all(fnp.linalg.norm(x, axis=-1) < 1.0))
        ((4, 3), True)

    References:
        F. Barthe, O. Guedon, S. Mendelson, A. Naor, "A probabilistic approach to the
        geometry of the l_p^n-ball", Annals of Probability 33(2), 2005; ``jax.random.ball``.
    """
    key, device = _key_data(key, "ball")
    shape, dt = _shape(shape, "ball"), _float_dtype(dtype, "ball")
    d = _args.size(d, "random.ball", "d", minimum=1)
    power = _positive_param(p, device, "ball", "p")
    if shape_of(power) != ():
        raise ShapeError(f"random.ball: p must be a scalar, got shape {shape_of(power)}")
    kg, ke = random_split(key, shape=(2,))
    g = _generalized_normal(kg, power, (*shape, d), dt)
    e = exponential(ke, shape, dt)
    pw = fnp.astype(power, dt) if isinstance(power, Tensor) else power
    radius = (fnp.sum(fnp.abs(g) ** pw, axis=-1) + e) ** (1.0 / pw)
    return g / radius[..., None]


def orthogonal(
    key: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None
) -> Tensor:
    """Haar-distributed (uniformly random) orthogonal matrices, or ``(n, m)`` ones with
    orthonormal columns (``n >= m``) or rows (``n < m``).

    The QR factorisation ``z = q r`` of a standard normal ``(max(n, m), min(n, m))`` matrix,
    with the columns of ``q`` multiplied by ``sign(diag(r))`` so that the factorisation is
    unique and ``q`` exactly Haar (Mezzadri 2007); transposed when ``n < m``.

    Args:
        key: ``(2,)`` uint32 key.
        n: rows, a positive Python int.
        shape: batch shape (int or tuple).
        dtype: float32 or float64 (None: float64).
        m: columns, a positive Python int (None: ``n``, square matrices).

    Returns:
        Tensor of shape ``shape + (n, m)`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not float32 or float64; ``n`` or ``m`` is not an int.
        ValueError: ``n < 1`` or ``m < 1``.

    Example:
        >>> from fgrad import random
        >>> q = random.orthogonal(random.key(0), 3)
        >>> bool(fnp.allclose(q.T @ q, fnp.eye(3), atol=1e-12))
        True

    References:
        F. Mezzadri, "How to generate random matrices from the classical compact groups",
        Notices of the AMS 54(5), 2007; ``jax.random.orthogonal``.
    """
    key, shape, dt = _float_setup(key, shape, dtype, "orthogonal")
    if dt == np.float16:
        raise DTypeError("random.orthogonal: dtype must be float32 or float64 (QR), got float16")
    sizes = [
        _args.size(v, "random.orthogonal", name, minimum=1)
        for name, v in (("n", n), ("m", n if m is None else m))
    ]
    rows, cols = max(sizes), min(sizes)
    z = random_normal(key, shape=(*shape, rows, cols), dtype=dt)
    q, r = fnp.linalg.qr(z)
    d = fnp.diagonal(r, axis1=-2, axis2=-1)
    q = q * fnp.where(d < 0, -1.0, 1.0).astype(dt)[..., None, :]
    return fnp.swapaxes(q, -1, -2) if sizes[0] < sizes[1] else q


_MVN_METHODS = ("cholesky", "eigh", "svd")


def multivariate_normal(
    key: Any,
    mean: Any,
    cov: Any,
    shape: Any = None,
    dtype: Any = None,
    method: str = "cholesky",
) -> Tensor:
    """Multivariate normal samples ``mean + A z``, ``A A^T = cov``, differentiable in both.

    ``z`` is standard normal; ``A`` is the Cholesky factor (``method="cholesky"``, default:
    ``cov`` must be positive definite), ``v sqrt(w)`` from ``eigh`` or ``u sqrt(s)`` from
    ``svd`` (these two allow a singular, positive semi-definite ``cov``).

    Args:
        key: ``(2,)`` uint32 key.
        mean: ``(..., n)`` real Tensor.
        cov: ``(..., n, n)`` real symmetric positive (semi-)definite Tensor.
        shape: batch shape of the samples; ``mean.shape[:-1]`` and ``cov.shape[:-2]``
            broadcast to it. None (default): their broadcast shape.
        dtype: float32 or float64 (None: float64).
        method: ``"cholesky"``, ``"eigh"`` or ``"svd"``.

    Returns:
        Tensor of shape ``shape + (n,)`` and ``dtype``.

    Raises:
        TypeError: ``key`` is not a key.
        DTypeError: ``dtype`` is not float32 or float64.
        ShapeError: ``mean`` is a scalar, ``cov`` is not ``(..., n, n)`` for ``mean``'s
            ``n``, or the batch shapes do not broadcast to ``shape``.
        ValueError: ``method`` is not one of the three.
        DTypeError: ``method`` is not a string.

    Example:
        >>> from fgrad import random
        >>> cov = fnp.array([[2.0, 0.5], [0.5, 1.0]])
        >>> x = random.multivariate_normal(random.key(0), fnp.zeros(2), cov, (20000,))
        >>> print(fnp.round(x.T @ x / 20000, 1))  # the sample covariance
        [[2.  0.5]
         [0.5 1. ]]

    References:
        ``jax.random.multivariate_normal`` (the same three factorisations).
    """
    key, device = _key_data(key, "multivariate_normal")
    dt = _float_dtype(dtype, "multivariate_normal")
    if dt == np.float16:
        raise DTypeError("random.multivariate_normal: dtype must be float32 or float64")
    method = _args.choice(method, "random.multivariate_normal", "method", _MVN_METHODS)
    mu = _param(mean, device, "multivariate_normal", "mean", traced="read")
    sigma = _param(cov, device, "multivariate_normal", "cov", traced="read")
    ms, cs = shape_of(mu), shape_of(sigma)
    if not ms or len(cs) < 2 or cs[-2:] != (ms[-1], ms[-1]):
        raise ShapeError(
            f"random.multivariate_normal: mean must be (..., n) and cov (..., n, n), got "
            f"mean {ms} and cov {cs}"
        )
    shape = _broadcast_shape(
        "multivariate_normal", shape, mean_batch=ms[:-1], cov_batch=cs[:-2]
    )
    mu, sigma = fnp.astype(mu, dt), fnp.astype(sigma, dt)
    if method == "cholesky":
        factor = fnp.linalg.cholesky(sigma)
    elif method == "eigh":
        w, v = fnp.linalg.eigh(sigma)
        factor = v * fnp.sqrt(fnp.maximum(w, 0.0))[..., None, :]
    else:
        u, s, _ = fnp.linalg.svd(sigma)
        factor = u * fnp.sqrt(s)[..., None, :]
    z = random_normal(key, shape=(*shape, ms[-1]), dtype=dt)
    return mu + fnp.matmul(factor, z[..., None])[..., 0]
