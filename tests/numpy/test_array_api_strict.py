"""Array API code run through array_api_strict (the standard's reference) and through fgrad.

Each function below is written against the standard only (``xp = x.__array_namespace__()``,
the standard's names and keywords), as a library that supports the Array API would write
it. It runs on array_api_strict arrays and on fgrad Tensors from the same data, and the
results agree to float64 rounding; on fgrad it also runs under ``jit`` and is
differentiable (``check_grads`` against float64 finite differences).
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

xps = pytest.importorskip("array_api_strict")


# ------------------------------------------------------------- Array API code, as written


def standardise(x):
    """Columns to zero mean and unit (sample) standard deviation."""
    xp = x.__array_namespace__()
    mean = xp.mean(x, axis=0, keepdims=True)
    sd = xp.std(x, axis=0, correction=1, keepdims=True)
    return (x - mean) / sd


def log_softmax_and_softmax(x, axis=-1):
    """Stable softmax by the max shift, and its log (logsumexp)."""
    xp = x.__array_namespace__()
    z = x - xp.max(x, axis=axis, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))
    return z - lse, xp.exp(z - lse)


def ridge_and_qr_least_squares(X, y, lam):
    """Ridge by the normal equations (solve), and plain least squares by QR."""
    xp = X.__array_namespace__()
    Xt = xp.linalg.matrix_transpose(X)
    n = X.shape[1]
    ridge = xp.linalg.solve(Xt @ X + lam * xp.eye(n, dtype=X.dtype), Xt @ y[:, None])
    Q, R = xp.linalg.qr(X, mode="reduced")
    beta = xp.linalg.solve(R, xp.linalg.matrix_transpose(Q) @ y[:, None])
    residual = xp.linalg.vector_norm(X @ beta - y[:, None])
    return ridge[:, 0], beta[:, 0], residual


def median_and_mad(x):
    """Per-column median and median absolute deviation (no histogram), through sort."""
    xp = x.__array_namespace__()
    n = x.shape[0]

    def median(v):
        s = xp.sort(v, axis=0)
        return (s[(n - 1) // 2, ...] + s[n // 2, ...]) / 2

    med = median(x)
    return med, median(xp.abs(x - med))


def sort_and_search(x, queries):
    """Ranks, the top 3, where queries fall, and the positive entries."""
    xp = x.__array_namespace__()
    order = xp.argsort(x, descending=True, stable=True)
    top3 = xp.take(x, order[:3], axis=0)
    s = xp.sort(x, stable=True)
    left = xp.searchsorted(s, queries, side="left")
    right = xp.searchsorted(s, queries, side="right")
    positive = xp.nonzero(x > 0)[0]
    clipped = xp.where(x > 0, x, xp.zeros_like(x))
    return order, top3, left, right, positive, clipped, xp.argmax(x), xp.argmin(x)


def set_summary(labels, wanted):
    """Distinct labels, their counts, the inverse map, first indices and membership."""
    xp = labels.__array_namespace__()
    values = xp.unique_values(labels)
    counts = xp.unique_counts(labels)
    inverse = xp.unique_inverse(labels)
    every = xp.unique_all(labels)
    member = xp.isin(labels, wanted)
    rebuilt = xp.take(inverse.values, xp.reshape(inverse.inverse_indices, (-1,)))
    return (values, counts.values, counts.counts, inverse.inverse_indices, every.indices,
            member, rebuilt)


def weighted_scores(x, w):
    """Dtype-aware code: promotion, finfo, a cast, broadcasting, clip and a norm."""
    xp = x.__array_namespace__()
    dtype = xp.result_type(x, w)
    eps = xp.finfo(dtype).eps
    xw = xp.astype(x, dtype) * w
    norms = xp.linalg.vector_norm(xw, axis=-1, keepdims=True)
    unit = xw / xp.clip(norms, min=eps)
    return xp.sum(unit * xp.flip(unit, axis=0), axis=-1), xp.sign(xp.roll(w, 1) - w)


# ---------------------------------------------------------------- the two namespaces


def _pair(*arrays):
    """The same data as array_api_strict arrays and as fgrad Tensors."""
    return [xps.asarray(a) for a in arrays], [fnp.asarray(a) for a in arrays]


def _numpy(value):
    if value is None:
        return None
    if isinstance(value, fgrad.Tensor):
        return np.asarray(value)
    return np.from_dlpack(value)


def _same(strict_out, fgrad_out, rtol=1e-12):
    strict_out = strict_out if isinstance(strict_out, tuple) else (strict_out,)
    fgrad_out = fgrad_out if isinstance(fgrad_out, tuple) else (fgrad_out,)
    assert len(strict_out) == len(fgrad_out)
    for s, f in zip(strict_out, fgrad_out):
        if s is None:
            continue
        s, f = _numpy(s), _numpy(f)
        assert s.shape == f.shape and s.dtype == f.dtype, (s.shape, f.shape, s.dtype, f.dtype)
        if s.dtype.kind in "fc":
            assert_allclose(f, s, rtol=rtol, atol=1e-13)
        else:
            assert_array_equal(f, s)


RNG = np.random.default_rng(14)
X = RNG.normal(size=(12, 4)) * np.array([1.0, 10.0, 0.1, 3.0]) + np.array([0.0, 5.0, -1.0, 2.0])
Y = X @ np.array([0.5, -0.2, 3.0, 1.0]) + 0.1 * RNG.normal(size=12)


def test_standardise():
    s, f = _pair(X)
    _same(standardise(*s), standardise(*f))
    assert_allclose(np.asarray(fgrad.jit(standardise)(*f)), np.asarray(standardise(*f)), rtol=1e-14)
    check_grads(lambda x: fnp.sum(standardise(x) ** 3), f, order=2)


def test_softmax():
    logits = RNG.normal(size=(3, 5)) * 30.0  # large: the max shift keeps exp finite
    s, f = _pair(logits)
    for axis in (-1, 0):
        _same(log_softmax_and_softmax(*s, axis=axis), log_softmax_and_softmax(*f, axis=axis))
    check_grads(lambda x: log_softmax_and_softmax(x)[0][:, 0], (fnp.asarray(logits / 30.0),), order=2)


def test_least_squares():
    s, f = _pair(X, Y)
    _same(ridge_and_qr_least_squares(*s, 0.5), ridge_and_qr_least_squares(*f, 0.5), rtol=1e-10)
    beta = np.asarray(ridge_and_qr_least_squares(*f, 0.5)[1])
    assert_allclose(beta, np.linalg.lstsq(X, Y, rcond=None)[0], rtol=1e-10)
    check_grads(lambda y: ridge_and_qr_least_squares(f[0], y, 0.5)[0], (f[1],), order=1)


def test_median_and_mad():
    for n in (12, 11):
        s, f = _pair(X[:n])
        _same(median_and_mad(*s), median_and_mad(*f))
        assert_allclose(np.asarray(median_and_mad(*f)[0]), np.median(X[:n], axis=0), rtol=1e-14)
    _same(fgrad.jit(median_and_mad)(fnp.asarray(X)), median_and_mad(*_pair(X)[0]))


def test_sort_and_search():
    x = np.array([0.5, -1.0, 2.0, 0.5, 3.0, -2.0, 0.0])
    q = np.array([0.5, -5.0, 2.5, 10.0])
    s, f = _pair(x, q)
    _same(sort_and_search(*s), sort_and_search(*f))


def test_sets():
    labels = np.array([3, 1, 3, 7, 1, 1, 0])
    s, f = _pair(labels, np.array([1, 7]))
    _same(set_summary(*s), set_summary(*f))


def test_dtype_aware_code():
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    w = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    s, f = _pair(x, w)
    _same(weighted_scores(*s), weighted_scores(*f), rtol=1e-6)
    assert weighted_scores(*f)[0].dtype == np.float32
