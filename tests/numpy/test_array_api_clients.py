"""Real Array API clients on fgrad Tensors: array-api-compat, array-api-extra, scikit-learn.

Each result is compared with the library's own answer on numpy arrays, and gradients
through the libraries' code with float64 finite differences (``check_grads``). Where a
library writes into its arrays in place (``x[i] = v``), a Tensor raises ``MutationError``
naming the functional update: those calls are listed here as the known limits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import MutationError
from fgrad.test_util import check_grads

compat = pytest.importorskip("array_api_compat")
xpx = pytest.importorskip("array_api_extra")

RNG = np.random.default_rng(7)
A = RNG.normal(size=(6, 3))
B = RNG.normal(size=(2, 4))


def test_array_api_compat_finds_fgrad_numpy():
    x = fnp.asarray(A)
    assert compat.array_namespace(x) is fnp
    assert compat.array_namespace(x, fnp.ones(2), 1.5) is fnp  # Python scalars are ignored
    assert compat.is_array_api_obj(x) and not compat.is_numpy_array(x)
    assert compat.device(x) == fgrad.backend.CPU and compat.size(x) == 18
    assert compat.to_device(x, "cpu") is x
    assert not compat.is_lazy_array(x)  # eager: bool(x) and float(x) are cheap
    # A traced value is a Tensor of the same namespace.
    fgrad.grad(lambda v: fnp.sum(v) if compat.array_namespace(v) is fnp else None)(x)


def test_array_api_extra_matches_numpy():
    a, b = fnp.asarray(A), fnp.asarray(B)
    assert xpx.atleast_nd(a[0], ndim=3).shape == (1, 1, 3)
    assert_allclose(xpx.cov(a.T), np.cov(A.T), rtol=1e-13)
    assert_allclose(xpx.kron(a, b), np.kron(A, B), rtol=1e-14)
    assert_allclose(xpx.sinc(a), np.sinc(A), rtol=1e-13)
    labels = fnp.asarray([3, 1, 3, 0, 1])
    assert int(xpx.nunique(labels)) == 3
    assert_array_equal(xpx.one_hot(labels, 4), np.eye(4)[[3, 1, 3, 0, 1]])
    assert_array_equal(xpx.setdiff1d(labels, fnp.asarray([1])), [0, 3])
    assert_array_equal(xpx.union1d(labels, fnp.asarray([9])), [0, 1, 3, 9])
    assert_array_equal(xpx.isin(labels, fnp.asarray([0, 3])), np.isin([3, 1, 3, 0, 1], [0, 3]))
    part = np.asarray(xpx.partition(a[:, 0], 2))
    assert_allclose(np.sort(part), np.sort(A[:, 0])) and part[2] == np.sort(A[:, 0])[2]
    assert max(part[:2]) <= part[2] <= min(part[3:])
    bad = fnp.asarray([np.nan, np.inf, -1.0])
    assert_allclose(xpx.nan_to_num(bad), np.nan_to_num(np.array([np.nan, np.inf, -1.0])))
    assert xpx.default_dtype(fnp) == np.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the standard has it now
        assert xpx.expand_dims(a, axis=(0, 2)).shape == (1, 6, 1, 3)


def test_gradients_through_array_api_extra():
    a = fnp.asarray(A)
    check_grads(lambda x: fnp.linalg.slogdet(xpx.cov(x.T))[1], (a,), order=2)
    check_grads(lambda x: fnp.sum(xpx.sinc(x) * xpx.kron(x, x)[:6, :3]), (a,), order=2)
    # vmap and jit of the composition agree with the loop.
    per_row = fgrad.vmap(lambda r: fnp.sum(xpx.sinc(r)))(a)
    assert_allclose(per_row, np.sinc(A).sum(axis=1), rtol=1e-13)
    assert_allclose(fgrad.jit(xpx.sinc)(a), np.sinc(A), rtol=1e-13)


def test_array_api_extra_in_place_updates_raise_clearly():
    # array-api-compat counts every unknown Array API type as writeable, so these write
    # with ``x[idx] = v``; fgrad refuses, naming the functional form (JAX gets x.at[]).
    a = fnp.asarray(A)
    calls = [
        lambda: xpx.at(a)[0].set(1.0),
        lambda: xpx.create_diagonal(a[0]),
        lambda: xpx.pad(a, 1),
        lambda: xpx.isclose(a, a),
        lambda: xpx.apply_where(a > 0, a, fnp.sqrt, fill_value=0.0),
    ]
    for call in calls:
        with pytest.raises(MutationError, match=r"x\.at\[idx\]\.set"):
            call()


@pytest.fixture
def sklearn_array_api(monkeypatch):
    """scikit-learn with array_api_dispatch=True, for this test only.

    scikit-learn refuses the mode unless SCIPY_ARRAY_API=1; the functions used here
    compute through the namespace alone, so setting it after scipy's import is enough
    (examples/array_api_grad.py sets it before, as users do).
    """
    sklearn = pytest.importorskip("sklearn")
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield sklearn


def test_sklearn_on_tensors_gives_numpys_results(sklearn_array_api):
    sklearn = sklearn_array_api
    from sklearn.decomposition import PCA
    from sklearn.metrics import mean_squared_error, pairwise

    X = RNG.normal(size=(30, 4)) @ RNG.normal(size=(4, 4))
    Y = RNG.normal(size=(5, 4))
    t_X, t_Y = fnp.asarray(X), fnp.asarray(Y)
    pca = PCA(n_components=2, svd_solver="full").fit(t_X)
    scores = pca.transform(t_X)
    with sklearn.config_context(array_api_dispatch=False):
        ref = PCA(n_components=2, svd_solver="full").fit(X)
        kernels = {
            f: f(X, Y) for f in (pairwise.euclidean_distances, pairwise.rbf_kernel,
                                 pairwise.linear_kernel, pairwise.polynomial_kernel)
        }
        mse = mean_squared_error(X[:, 0], X[:, 1])
    assert isinstance(scores, fgrad.Tensor)
    assert_allclose(scores, ref.transform(X), rtol=1e-10, atol=1e-12)
    assert_allclose(pca.explained_variance_, ref.explained_variance_, rtol=1e-12)
    for f, expected in kernels.items():
        got = f(t_X, t_Y)
        assert isinstance(got, fgrad.Tensor), f.__name__
        assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=f.__name__)
    assert_allclose(float(mean_squared_error(t_X[:, 0], t_X[:, 1])), mse, rtol=1e-14)


def test_grad_through_sklearn(sklearn_array_api):
    from sklearn.decomposition import PCA
    from sklearn.metrics import pairwise

    X, Y = fnp.asarray(RNG.normal(size=(8, 3))), fnp.asarray(RNG.normal(size=(4, 3)))
    check_grads(lambda x: fnp.sum(pairwise.rbf_kernel(x, Y, gamma=0.3) ** 2), (X,), order=2)
    check_grads(lambda x: pairwise.euclidean_distances(x, Y)[:, 0], (X,), order=1)
    # PCA's explained variance is the top eigenvalues of the covariance; its gradient
    # through sklearn's svd path is the eigenvector formula 2/(n-1) Xc v v^T.
    def top_variance(x):
        return PCA(n_components=1, svd_solver="full").fit(x).explained_variance_[0]

    Xn = np.asarray(X)
    xc = Xn - Xn.mean(axis=0)
    w, v = np.linalg.eigh(np.cov(xc.T))
    expected = 2 / (len(Xn) - 1) * xc @ np.outer(v[:, -1], v[:, -1])
    assert_allclose(fgrad.grad(top_variance)(X), expected, rtol=1e-9, atol=1e-12)


def test_sklearn_in_place_code_raises_clearly(sklearn_array_api):
    # StandardScaler and LinearDiscriminantAnalysis assign into arrays (scale[scale == 0]
    # = 1); on Tensors that is a MutationError naming the functional update.
    from sklearn.preprocessing import StandardScaler

    with np.errstate(invalid="ignore"), pytest.raises(MutationError, match=r"x\.at\[idx\]\.set"):
        StandardScaler().fit_transform(fnp.asarray(A))  # (0/0 in a variance it then fixes)
