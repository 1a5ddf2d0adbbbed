"""fgrad.numpy's reductions, elementwise wrappers and math names take numpy's calls.

Each function's parameters are checked against ``inspect.signature`` of numpy's namesake
(scipy.special's for ``logsumexp``): every numpy parameter exists, positional ones at the
same position, so any call numpy accepts binds; ufunc-only keywords (``casting``,
``order``, ``subok``, ``signature``) are left out, and registry ops (whose signature is
their kernel's, ``(x)`` or ``(x, y)``) are checked for numpy's positional inputs only. ``out=`` raises a TypeError pointing to
the functional style.
"""

import inspect

import numpy as np
import pytest
import scipy.special

import fgrad.numpy as fnp
from fgrad.core.op import Op
from fgrad.numpy import _elementwise, _math_extra, _reductions

UFUNC_ONLY = {"casting", "order", "subok", "signature", "kwargs"}
# fgrad.numpy names whose numpy counterpart is another function.
REFERENCE = {"logsumexp": scipy.special.logsumexp}
NAMES = sorted(set(_reductions.__all__) | set(_elementwise._WRAPPERS) | set(_math_extra.__all__))


def _numpy_params(name):
    ref = REFERENCE[name] if name in REFERENCE else getattr(np, name)
    return [p for p in inspect.signature(ref).parameters.values() if p.name not in UFUNC_ONLY
            and p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize("name", NAMES)
def test_signature_accepts_numpys_calls(name):
    fn = getattr(fnp, name)
    ours = inspect.signature(fn).parameters
    theirs = _numpy_params(name)
    if isinstance(fn, Op):  # a registry op: numpy's positional inputs (its ufunc keywords are not taken)
        theirs = [p for p in theirs if p.kind is p.POSITIONAL_ONLY]
    missing = [p.name for p in theirs if p.name not in ours and p.kind is not p.VAR_POSITIONAL
               and p.kind is not p.POSITIONAL_ONLY]
    assert not missing, f"{name}: numpy's parameters {missing} missing from {list(ours)}"
    ours_list = list(ours.values())
    positional = [p for p in theirs if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, p in enumerate(positional):
        q = ours_list[i]
        assert q.name == p.name or p.kind is p.POSITIONAL_ONLY, (name, i, p.name, q.name)
        assert q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD), (name, q)
        if p.kind is p.POSITIONAL_OR_KEYWORD:
            assert q.kind is q.POSITIONAL_OR_KEYWORD, f"{name}: {q.name} must be passable by name"
    for p in theirs:
        if p.kind is p.KEYWORD_ONLY:
            assert ours[p.name].kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD), (name, p.name)


X = np.array([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]])
W = np.array([[True, False, True], [True, True, False]])


@pytest.mark.parametrize("name,args,kwargs", [
    ("sum", (), {"a": X}),
    ("sum", (X, 1, None, None, True), {}),
    ("sum", (X,), {"axis": 0, "initial": 10.0, "where": W}),
    ("prod", (X, 0, None, None, True, 2.0, W), {}),
    ("mean", (X, 1, None, None, True), {"where": W}),
    ("max", (X, 1, None, True, -1.0, W), {}),
    ("min", (X,), {"axis": 0, "initial": 2.0}),
    ("amax", (X, None, None, False, 7.0), {}),
    ("var", (X, 1, None, None, 1, True), {"where": W}),
    ("std", (X,), {"axis": 0, "mean": X.mean(axis=0, keepdims=True)}),
    ("argmax", (X, 1, None), {"keepdims": True}),
    ("all", (X > 2, 1, None, True), {"where": W}),
    ("any", (X > 4, 0), {"where": W}),
    ("count_nonzero", (X > 2,), {"axis": 1, "keepdims": True}),
    ("cumsum", (X, 1, np.float32, None), {}),
    ("cumprod", (), {"a": X, "axis": 0}),
    ("nansum", (X, 1, None, None, True, 1.0, W), {}),
    ("nanmean", (X, 0, None, None, False), {"where": W}),
    ("round", (X / 3, 2, None), {}),
    ("around", (X / 3, 1), {}),
    ("clip", (X, 2.0, 4.0, None), {}),
    ("square", (X, None), {"dtype": np.float32}),
    ("reciprocal", (X,), {"out": None}),
    ("exp2", (X,), {"where": True}),
])
def test_numpys_calls_give_numpys_values(name, args, kwargs):
    want = getattr(np, name)(*args, **kwargs)
    got = getattr(fnp, name)(*args, **kwargs)
    assert np.asarray(got).shape == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_logsumexp_takes_scipys_positional_calls():
    want = scipy.special.logsumexp(X, 1, X, True, False)
    np.testing.assert_allclose(fnp.logsumexp(X, 1, X, True, False), want, rtol=1e-13)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "var", "std", "argmax",
                                  "all", "any", "cumsum", "nansum", "nanmean", "round", "clip",
                                  "square", "exp2", "nanmax", "nanvar", "nanmedian", "ptp",
                                  "nancumsum", "isposinf"])
def test_out_raises_a_clear_error_pointing_to_the_result(name):
    with pytest.raises(TypeError, match=rf"{name}: out= is not supported.*returned value"):
        getattr(fnp, name)(X, out=np.empty(3))


def test_where_needs_initial_for_max_and_ufunc_where_is_refused():
    with pytest.raises(ValueError, match="max: a where mask needs initial="):
        fnp.max(X, where=W)
    with pytest.raises(TypeError, match="square: where="):
        fnp.square(X, where=W)
    np.testing.assert_array_equal(fnp.max(np.zeros((0, 3)), axis=0, initial=-1.0), np.max(np.zeros((0, 3)), axis=0, initial=-1.0))
