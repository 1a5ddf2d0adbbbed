"""Differentiating scikit-learn and array-api-extra code with fgrad, through the Array API.

Libraries that support the Python Array API standard ask an array for its namespace
(``x.__array_namespace__()``) and compute with that namespace's functions. A fgrad Tensor
answers ``fgrad.numpy``, so such code runs on Tensors unchanged, and, since every
``fgrad.numpy`` function is traced by fgrad's transforms, ``fgrad.grad`` differentiates it.

This script, in notebook-style cells:

1. shows that scikit-learn (with ``array_api_dispatch=True``) computes on Tensors and
   gives numpy's numbers (PCA, ``rbf_kernel``);
2. differentiates a Gaussian kernel density estimate built from scikit-learn's
   ``rbf_kernel`` (the mean log density of one iris species' points under another's)
   with respect to the points, and checks the gradient against central finite
   differences;
3. runs gradient ascent on those points (mean shift, Fukunaga and Hostetler 1975), which
   carries them onto the other species;
4. differentiates ``log det`` of array-api-extra's ``cov`` and checks it against the
   closed form ``2 / (n - 1) * C^{-1} (X - mean)``.

Run ``python examples/array_api_grad.py`` (about 5 s, mostly importing scikit-learn).
scikit-learn's Array API mode needs ``SCIPY_ARRAY_API=1`` before scipy is imported; the
script sets it.

References:
    K. Fukunaga and L. Hostetler, "The estimation of the gradient of a density function,
    with applications in pattern recognition", IEEE Trans. Information Theory 21(1),
    32-40, 1975 (mean shift: ascent on a kernel density estimate).
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # read by scipy at import, by sklearn at dispatch

import array_api_compat  # noqa: E402
import array_api_extra as xpx  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.metrics.pairwise import rbf_kernel  # noqa: E402

import fgrad  # noqa: E402
import fgrad.numpy as fnp  # noqa: E402
from fgrad.test_util import check_grads  # noqa: E402

GAMMA = 0.5  # the RBF kernel's exp(-GAMMA * |x - y|^2), for iris' four features in cm


def log_density(x, y):
    """Mean log kernel density of the points ``x`` (n, d) under the sample ``y`` (m, d).

    The density at a point is ``mean_j k(x_i, y_j)`` with scikit-learn's RBF kernel (a
    Gaussian kernel density estimate, up to its constant).
    """
    return fnp.mean(fnp.log(fnp.mean(rbf_kernel(x, y, gamma=GAMMA), axis=1)))


def logdet_cov(x):
    """log det of the sample covariance of the rows of ``x`` (n, d), by array-api-extra."""
    sign, logdet = fnp.linalg.slogdet(xpx.cov(fnp.matrix_transpose(x)))
    return logdet


def main() -> dict:
    iris = load_iris()
    setosa = fnp.asarray(iris.data[iris.target == 0][:25])
    versicolor = fnp.asarray(iris.data[iris.target == 1][:25])
    results = {}

    # %% 1. A Tensor is an Array API array; scikit-learn computes on it as on numpy.
    assert array_api_compat.array_namespace(setosa) is fnp
    data = fnp.asarray(iris.data)
    with sklearn.config_context(array_api_dispatch=True):
        pca = PCA(n_components=2, svd_solver="full").fit(data)
        scores = pca.transform(data)
        kernel = rbf_kernel(setosa, versicolor, gamma=GAMMA)
    reference = PCA(n_components=2, svd_solver="full").fit(iris.data)
    results["pca_diff"] = float(np.max(np.abs(np.asarray(scores) - reference.transform(iris.data))))
    results["kernel_diff"] = float(
        np.max(np.abs(np.asarray(kernel) - rbf_kernel(iris.data[:25], iris.data[50:75], gamma=GAMMA)))
    )
    print(f"PCA on Tensors is a {type(scores).__name__}; max |fgrad - numpy| = "
          f"{results['pca_diff']:.1e} (scores), {results['kernel_diff']:.1e} (rbf_kernel)")

    # %% 2. The gradient of a kernel density built on sklearn's rbf_kernel, checked
    # against central finite differences in a random direction u.
    with sklearn.config_context(array_api_dispatch=True):
        value, grad_x = fgrad.value_and_grad(log_density)(setosa, versicolor)
        check_grads(log_density, (setosa, versicolor), order=2)  # raises if they disagree
        u = np.random.default_rng(0).normal(size=setosa.shape)
        eps = 1e-6
        up, down = log_density(setosa + eps * u, versicolor), log_density(setosa - eps * u, versicolor)
    fd = (float(up) - float(down)) / (2 * eps)
    directional = float(np.sum(np.asarray(grad_x) * u))
    results["density_grad_fd_diff"] = abs(directional - fd)
    print(f"mean log density of setosa under versicolor's = {float(value):.3f}; "
          f"<grad, u> = {directional:.6f}, finite difference {fd:.6f}")

    # %% 3. Gradient ascent on the setosa points (mean shift, jitted) carries them onto
    # versicolor: their mean log density rises past that of versicolor's own points (they
    # gather at its modes). Under
    # jit, values have no concrete value while tracing, so scikit-learn's input check
    # (``if not all finite: raise``) is turned off with ``assume_finite=True``.
    # With the step n / (2 GAMMA), each point moves to its kernel-weighted mean of y: the
    # mean-shift update, as d/dx_i of (1/n) sum_i log p(x_i) is (1/n) 2 GAMMA (m(x_i) - x_i).
    step = fgrad.jit(lambda x, y: x + x.shape[0] / (2 * GAMMA) * fgrad.grad(log_density)(x, y))
    x = setosa
    with sklearn.config_context(array_api_dispatch=True, assume_finite=True):
        weights = np.exp(-GAMMA * ((iris.data[:25, None] - iris.data[None, 50:75]) ** 2).sum(-1))
        mean_shift = weights @ iris.data[50:75] / weights.sum(axis=1, keepdims=True)
        results["step_diff"] = float(np.max(np.abs(np.asarray(step(x, versicolor)) - mean_shift)))
        history = [float(log_density(x, versicolor))]
        for _ in range(20):
            x = step(x, versicolor)
            history.append(float(log_density(x, versicolor)))
        results["own_density"] = float(log_density(versicolor, fnp.asarray(iris.data[50:75])))
    results["density_history"] = history
    print(f"one gradient step: max |fgrad - the mean-shift update in numpy| = "
          f"{results['step_diff']:.1e}")
    print(f"mean log density during 20 ascent steps: {history[0]:.3f} -> {history[-1]:.3f} "
          f"(versicolor's own points: {results['own_density']:.3f})")

    # %% 4. grad of log det(cov(X)) through array-api-extra equals 2/(n-1) C^{-1} (X - mean).
    grad_cov = fgrad.grad(logdet_cov)(setosa)
    xc = np.asarray(setosa) - np.asarray(setosa).mean(axis=0)
    closed = 2 / (xc.shape[0] - 1) * xc @ np.linalg.inv(np.cov(xc.T))
    results["cov_grad_diff"] = float(np.max(np.abs(np.asarray(grad_cov) - closed)))
    check_grads(logdet_cov, (setosa,), order=2)
    print(f"grad log det cov(X): max |fgrad - closed form| = {results['cov_grad_diff']:.1e}")
    return results


if __name__ == "__main__":
    main()
