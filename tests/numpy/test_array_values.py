"""fgrad.numpy's shape, indexing, set and creation functions against numpy on random inputs."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(2, 3, 4))
V = RNG.normal(size=6)
I1 = RNG.integers(0, 6, size=9)
I2 = RNG.integers(3, 9, size=7)
SQ = RNG.normal(size=(4, 4))
C = RNG.normal(size=5) + 1j * RNG.integers(-1, 2, size=5)
CUBE = RNG.normal(size=(3, 3, 3))


def _np(x):
    if isinstance(x, (tuple, list)):
        return tuple(_np(v) for v in x)
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return np.asarray(x)


def _same(got, want):
    got, want = _np(got), _np(want)
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "iub":
        assert got.dtype.kind == want.dtype.kind, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# (name, args, kwargs): fnp.name(*args, **kwargs) against np.name on the same numpy inputs
CASES = [
    ("append", (A, B[0]), {"axis": 0}),
    ("append", (V, A), {}),
    ("insert", (V, 2, 9.0), {}),
    ("insert", (A, [0, 2, 2], [7.0, 8.0, 9.0]), {"axis": 1}),
    ("insert", (A, 1, [[1.0], [2.0], [3.0]]), {"axis": 1}),
    ("insert", (A, slice(0, 4, 2), 5.0), {"axis": 1}),
    ("insert", (A, -1, V[:4]), {"axis": 0}),
    ("delete", (V, [0, 3]), {}),
    ("delete", (A, slice(1, None, 2)), {"axis": 1}),
    ("delete", (A, -1), {"axis": 0}),
    ("delete", (V, np.array([True, False] * 3)), {}),
    ("block", ([[A, A[:, :1]], [B[0, :1], V[None, :1]]],), {}),
    ("block", ([V, 1.0, V],), {}),
    ("column_stack", ([V, V * 2, A.T[:, :1].repeat(6, 0)[:6]],), {}),
    ("dstack", ([A, A],), {}),
    ("hsplit", (A, 2), {}),
    ("hsplit", (V, [1, 4]), {}),
    ("vsplit", (B, [1]), {}),
    ("dsplit", (B, 2), {}),
    ("rot90", (A,), {}),
    ("rot90", (B, 3, (2, 0)), {}),
    ("rot90", (A, -2), {}),
    ("rollaxis", (B, 2), {}),
    ("rollaxis", (B, 0, 3), {}),
    ("rollaxis", (B, 1, -1), {}),
    ("resize", (A, (5, 3)), {}),
    ("resize", (V, 2), {}),
    ("trim_zeros", (np.array([0.0, 0.0, 1.0, 0.0, 2.0, 0.0]),), {}),
    ("trim_zeros", (np.array([0.0, 1.0, 0.0]),), {"trim": "b"}),
    ("trim_zeros", (np.array([[0, 0, 0], [0, 3, 0], [0, 0, 4]]),), {}),
    ("tri", (3, 5, 1), {}),
    ("tri", (4,), {"dtype": int}),
    ("tril_indices", (4, -1), {}),
    ("tril_indices", (3, 1, 5), {}),
    ("triu_indices", (4, 1), {}),
    ("tril_indices_from", (A,), {"k": 1}),
    ("triu_indices_from", (A,), {"k": -1}),
    ("diag_indices", (3, 3), {}),
    ("diag_indices_from", (CUBE,), {}),
    ("diagflat", (A[:2, :2], -1), {}),
    ("indices", ((2, 3),), {}),
    ("indices", ((2, 3),), {"sparse": True}),
    ("ix_", ([0, 2], [1, 3]), {}),
    ("ix_", (np.array([True, False, True]), [0]), {}),
    ("geomspace", (1.0, 1000.0, 5), {}),
    ("geomspace", (-2.0, -32.0, 5), {"endpoint": False}),
    ("logspace", (0.0, 3.0, 4), {}),
    ("logspace", (1.0, 2.0, 5), {"base": 2.0}),
    ("ravel_multi_index", ((I1[:4] % 3, I1[4:8] % 4), (3, 4)), {}),
    ("ravel_multi_index", ((I1[:4] + 2, I1[4:8] - 3), (3, 4)), {"mode": "wrap"}),
    ("ravel_multi_index", ((I1[:4] + 2, I1[4:8]), (3, 4)), {"mode": "clip", "order": "F"}),
    ("unravel_index", (I1, (2, 3)), {}),
    ("unravel_index", (I1, (3, 2)), {"order": "F"}),
    ("choose", (I1[:5] % 2, [V[:5], V[1:]]), {}),
    ("choose", (np.array([[0, 3], [1, 2]]), np.arange(4.0)[:, None, None] + A[:2, :2]),
     {"mode": "clip"}),
    ("choose", (np.array([5, -1]), [V[:2], V[2:4], V[4:]]), {"mode": "wrap"}),
    ("compress", ([True, False, True], A), {"axis": 0}),
    ("compress", ([0, 1, 1], A, 1), {}),
    ("compress", ([True, False, True, True], A), {}),
    ("extract", (A > 0, A), {}),
    ("argpartition", (V, 2), {}),
    ("partition", (A, 1), {"axis": 0}),
    ("lexsort", ([I1, I1 % 3],), {}),
    ("lexsort", (np.stack([I1, I1 % 2]),), {}),
    ("sort_complex", (C,), {}),
    ("sort_complex", (I1,), {}),
    ("isin", (I1, I2), {}),
    ("isin", (I1, I2), {"invert": True}),
    ("isin", (np.arange(300) % 17, np.arange(0, 400, 3)), {}),
    ("isin", (np.r_[np.arange(400.0) % 37, np.nan], np.r_[np.arange(0.0, 500, 3), np.nan]), {}),
    ("intersect1d", (I1, I2), {}),
    ("intersect1d", (I1, I2), {"return_indices": True}),
    ("union1d", (I1, I2), {}),
    ("setdiff1d", (I1, I2), {}),
    ("setdiff1d", (np.array([5, 1, 9]), I2), {"assume_unique": True}),
    ("setxor1d", (I1, I2), {}),
    ("unique_all", (I1.reshape(3, 3),), {}),
    ("unique_counts", (I1,), {}),
    ("unique_inverse", (I1.reshape(3, 3),), {}),
    ("unique_values", (V[I1],), {}),
    ("array_equal", (A, A.copy()), {}),
    ("array_equal", (A, A[:2]), {}),
    ("array_equal", (np.array([1.0, np.nan]), np.array([1.0, np.nan])), {"equal_nan": True}),
    ("array_equal", (np.array([1.0, np.nan]), np.array([1.0, np.nan])), {}),
    ("array_equiv", (V[:4], np.tile(V[:4], (3, 1))), {}),
    ("array_equiv", (V[:4], A), {}),
    ("copy", (A,), {}),
    ("select", ([A > 0.5, A < -0.5], [A, A ** 2]), {"default": -1.0}),
    ("select", ([V > 0], [1]), {}),
    ("select", ([A > 0], [A.astype(np.float32)]), {"default": 2.5}),
]


@pytest.mark.parametrize(
    "name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_matches_numpy(name, args, kwargs):
    want = getattr(np, name)(*args, **kwargs)
    got = getattr(fnp, name)(*args, **kwargs)
    _same(got, want)


def test_piecewise_later_conditions_win_and_otherwise():
    x = np.linspace(-2, 2, 9)
    conds = [x < 0, x < 1]
    funcs = [lambda v: v * 10, lambda v: v ** 2, lambda v: v - 100]
    want = np.piecewise(x, conds, funcs)
    got = fnp.piecewise(fnp.asarray(x), [fnp.asarray(c) for c in conds], funcs)
    _same(got, want)
    _same(fnp.piecewise(x, [x > 0], [3.0]), np.piecewise(x, [x > 0], [3.0]))


def test_fill_diagonal_put_place_put_along_axis_match_numpy_in_place():
    cases = [
        ("fill_diagonal", (np.zeros((5, 3)), [1.0, 2.0]), {"wrap": True}),
        ("fill_diagonal", (np.zeros((3, 5)), 7.0), {}),
        ("fill_diagonal", (np.zeros((3, 3, 3)), [1.0, 2.0, 3.0]), {}),
        ("put", (A.copy(), [0, 5, 11, 5], [1.0, 2.0, 3.0]), {}),
        ("put", (V.copy(), [-1, 7], [4.0, 5.0]), {"mode": "wrap"}),
        ("put", (V.copy(), [9, 2], [4.0]), {"mode": "clip"}),
        ("place", (A.copy(), A > 0, [10.0, 20.0]), {}),
        ("put_along_axis", (A.copy(), np.argsort(A, axis=1)[:, :2], 0.0, 1), {}),
        ("put_along_axis", (B.copy(), np.argmax(B, axis=0)[None], -1.0, 0), {}),
        ("put_along_axis", (A.copy(), np.array([3, 0]), [8.0, 9.0], None), {}),
    ]
    for name, args, kwargs in cases:
        target = args[0].copy()
        getattr(np, name)(target, *args[1:], **kwargs)
        got = getattr(fnp, name)(*args, inplace=False, **kwargs)
        _same(got, target)


def test_mask_indices_and_fromfunction():
    _same(fnp.mask_indices(4, fnp.triu, 1), np.mask_indices(4, np.triu, 1))
    f = lambda i, j: i * 3 + j ** 2  # noqa: E731
    _same(fnp.fromfunction(f, (3, 4)), np.fromfunction(f, (3, 4)))


def test_apply_along_and_over_axes_match_numpy():
    def f(v):
        return v * v.sum()

    for axis in (0, 1, 2):
        _same(fnp.apply_along_axis(f, axis, B), np.apply_along_axis(f, axis, B))
    _same(fnp.apply_along_axis(lambda v: v.max(), 1, A), np.apply_along_axis(np.max, 1, A))
    outer = lambda v: v[:, None] * v[None, :2]  # noqa: E731
    _same(fnp.apply_along_axis(outer, 1, B), np.apply_along_axis(outer, 1, B))
    _same(fnp.apply_over_axes(fnp.sum, B, [0, 2]), np.apply_over_axes(np.sum, B, [0, 2]))
    _same(fnp.apply_over_axes(fnp.cumsum, A, 1), np.apply_over_axes(np.cumsum, A, 1))


def test_frompyfunc_broadcasts_and_has_two_outputs():
    f = fnp.frompyfunc(lambda a, b: (a + b, a * b), 2, 2)
    s, p = f(A, V[:4])
    _same(s, A + V[:4])
    _same(p, A * V[:4])


def test_printing_follows_numpys_options():
    x = fnp.asarray(A)
    assert fnp.array_str(x, precision=2) == np.array_str(A, precision=2)
    assert fnp.array_repr(x) == repr(x)
    with fnp.printoptions(precision=3):
        assert fnp.get_printoptions()["precision"] == 3
        assert str(x) == str(A.round(3)) or str(x) == np.array_str(A)
    assert fnp.get_printoptions()["precision"] == np.get_printoptions()["precision"]
    saved = np.get_printoptions()
    try:
        fnp.set_printoptions(precision=2, suppress=True)
        assert repr(fnp.asarray([1 / 3])) == "Tensor([0.33], dtype=float64)"
        with pytest.raises(ValueError, match="set_printoptions"):
            fnp.set_printoptions(floatmode="nonsense")
    finally:
        np.set_printoptions(**saved)
    with pytest.raises(ValueError, match="printoptions"):
        fnp.printoptions(floatmode="nonsense")
    assert np.get_printoptions() == saved


def test_buffers_files_and_strings(tmp_path):
    raw = np.arange(5, dtype=np.int32)
    _same(fnp.frombuffer(raw.tobytes(), dtype=np.int32, count=3, offset=4), raw[1:4])
    path = tmp_path / "v.bin"
    raw.tofile(path)
    _same(fnp.fromfile(path, dtype=np.int32), raw)
    _same(fnp.fromiter(iter([1.5, 2.5]), float), np.array([1.5, 2.5]))
    _same(fnp.fromstring("1 2 3", dtype=int, sep=" "), np.array([1, 2, 3]))


def test_save_load_npy_and_npz_round_trip(tmp_path):
    x = fnp.asarray(A.astype(np.float32))
    fnp.save(tmp_path / "a", x)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]  # no temporary left
    back = fnp.load(tmp_path / "a.npy")
    assert back.dtype == np.float32
    _same(back, np.load(tmp_path / "a.npy"))
    fnp.savez(tmp_path / "b.npz", x, ints=fnp.arange(3))
    got = fnp.load(tmp_path / "b.npz")
    assert sorted(got) == ["arr_0", "ints"]
    _same(got["ints"], np.arange(3))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        fnp.load(tmp_path / "obj.npy")
    with pytest.raises(ValueError, match="never unpickles"):
        fnp.load(tmp_path / "a.npy", allow_pickle=True)


def test_save_is_atomic_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "w.npy"
    fnp.save(target, fnp.arange(3))

    def broken(f, data, **kwargs):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        fnp.save(target, fnp.ones(5))
    monkeypatch.undo()
    _same(fnp.load(target), np.arange(3))
    assert [p.name for p in tmp_path.iterdir()] == ["w.npy"]
