"""fgrad.numpy's shape, indexing, creation, sorting and array functions take numpy's calls:
numpy's parameter names in numpy's positions, with numpy's meaning."""

import inspect

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.numpy import _array_extra, _creation, _indexing, _shape, _sorting

MODULES = (_shape, _indexing, _creation, _sorting, _array_extra)


def _pairs():
    for mod in MODULES:
        for name in mod.__all__:
            ours, theirs = getattr(mod, name), getattr(np, name, None)
            if theirs is None or not callable(theirs) or isinstance(theirs, type):
                continue
            try:
                sig = inspect.signature(theirs)
            except (TypeError, ValueError):
                continue
            yield name, inspect.signature(ours), sig


PAIRS = sorted(_pairs(), key=lambda p: p[0])


@pytest.mark.parametrize("name,ours,theirs", PAIRS, ids=[p[0] for p in PAIRS])
def test_numpy_parameters_in_numpy_positions(name, ours, theirs):
    P = inspect.Parameter
    mine = ours.parameters
    var_kw = any(p.kind is P.VAR_KEYWORD for p in mine.values())
    var_pos = any(p.kind is P.VAR_POSITIONAL for p in mine.values())
    for p in theirs.parameters.values():
        if p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD, P.POSITIONAL_ONLY):
            continue
        assert p.name in mine or var_kw, f"{name}: no parameter {p.name!r} ({ours})"
    positional = [p for p in theirs.parameters.values() if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    mine_pos = [p for p in mine.values() if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    if not var_pos:
        assert len(mine_pos) >= len(positional), f"{name}: {ours} takes fewer positions than {theirs}"
    for a, b in zip(positional, mine_pos):
        if a.kind is P.POSITIONAL_OR_KEYWORD:
            assert a.name == b.name, f"{name}: position of {a.name!r} holds {b.name!r}"


A = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("call", [
    lambda m: m.reshape(A, (4, 3), "F"),
    lambda m: m.reshape(A, shape=(2, 6), order="F"),
    lambda m: m.ravel(A, "F"),
    lambda m: m.transpose(A, (1, 0)),
    lambda m: m.concatenate([A, A], 1, None, dtype="float32", casting="same_kind"),
    lambda m: m.stack([A, A], 0, None, dtype=int, casting="unsafe"),
    lambda m: m.hstack([A, A], dtype="float32"),
    lambda m: m.linspace(0.0, 1.0, 5, False, True, None, 0),
    lambda m: m.linspace(np.array([0.0, 1.0]), 2.0, 3, axis=-1),
    lambda m: m.eye(N=2, M=3, k=1, dtype=int, order="C"),
    lambda m: m.zeros(3, float, "C"),
    lambda m: m.full((2,), 7, None, "C"),
    lambda m: m.full_like(A, 2.0, None, "K", True, (2, 2)),
    lambda m: m.zeros_like(A, shape=5),
    lambda m: m.array([1, 2], ndmin=3),
    lambda m: m.asarray([1.0], None, "C"),
    lambda m: m.sort(A[::-1], 0, None, None),
    lambda m: m.argsort(A[:, ::-1], -1, "stable", None),
    lambda m: m.median(A, 1, None, False, True),
    lambda m: m.quantile(A, 0.3, 0, None, False, "lower", True),
    lambda m: m.percentile(A, [10.0, 90.0], None, None, False, "midpoint"),
    lambda m: m.unique(np.array([3, 1, 3]), sorted=True),
    lambda m: m.take(A, [5, 30], None, None, "wrap"),
    lambda m: m.take_along_axis(A, np.array([[0], [1], [2]]), 1),
    lambda m: m.broadcast_to(np.arange(3.0), (2, 3), False),
    lambda m: m.permute_dims(A),
    lambda m: m.pad(A, 1, "constant", constant_values=5.0),
])
def test_numpy_calls_give_numpys_values(call):
    want = call(np)
    got = call(fnp)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w))
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("call", [
    lambda: fnp.concatenate([A], out=np.zeros(12)),
    lambda: fnp.stack([A], out=np.zeros(12)),
    lambda: fnp.take(A, [0], out=np.zeros(1)),
    lambda: fnp.median(A, out=np.zeros(())),
    lambda: fnp.quantile(A, 0.5, out=np.zeros(())),
    lambda: fnp.compress([True], A, out=np.zeros(1)),
    lambda: fnp.choose([0], [A[0]], out=np.zeros(1)),
])
def test_out_points_to_functional_style(call):
    with pytest.raises(TypeError, match="out= is not supported.*functional"):
        call()


def test_numpy_options_fgrad_cannot_honour_are_refused():
    with pytest.raises(TypeError, match="like="):
        fnp.zeros(2, like=A)
    with pytest.raises(ValueError, match="weights="):
        fnp.quantile(A, 0.5, weights=A)
    with pytest.raises(fgrad.errors.DTypeError, match="casting='same_kind'"):
        fnp.concatenate([A, A], dtype=int)
    with pytest.raises(TypeError, match="stat_length"):
        fnp.pad(A, 1, "constant", stat_length=2)
