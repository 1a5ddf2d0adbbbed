"""Gaussian-process regression with hyperparameters fitted by maximising the marginal
likelihood, in the notebook style: data, model, fit, predict, check.

The data are ``n_train`` noisy samples ``y = f(x) + noise`` of the smooth function
``f(x) = sin(3 x) + 0.3 cos(9 x)`` on ``[-3, 3]`` (noise standard deviation 0.1), and a
test grid of ``n_test`` points. The model is a zero-mean GP with the squared-exponential
kernel ``k(x, x') = s_f^2 exp(-(x - x')^2 / (2 l^2))`` plus white noise ``s_n^2``
(Rasmussen and Williams, *Gaussian Processes for Machine Learning*, 2006, chapter 2).

The three hyperparameters are fitted in log space by minimising the negative log marginal
likelihood (R&W eq. 2.30, computed as in their algorithm 2.1):

    -log p(y | x, theta) = y^T K^-1 y / 2 + sum(log diag L) + n log(2 pi) / 2,

with ``K = L L^T`` by ``fgrad.scipy.linalg.cho_factor`` and ``K^-1 y`` by ``cho_solve``;
``fgrad.scipy.optimize.minimize`` (BFGS) takes its gradient from ``fgrad.value_and_grad``
through the Cholesky factorisation. The fitted model predicts with the posterior mean and
variance (R&W eqs. 2.25-2.26); ``fgrad.scipy.stats`` gives the log marginal likelihood a
second way (``multivariate_normal.logpdf``) and the test log predictive density
(``norm.logpdf``).

Prints the fitted hyperparameters, the log marginal likelihood, the test RMSE (against the
noise-free function and against noisy test targets) and the mean test log predictive
density. ``python examples/gaussian_process.py --help`` lists the options.

References:
    C. E. Rasmussen and C. K. I. Williams, *Gaussian Processes for Machine Learning*,
    MIT Press 2006: eqs. 2.25-2.26 and 2.30, algorithm 2.1, section 5.4.1 (the gradient
    of the marginal likelihood, here by automatic differentiation).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy import linalg, optimize, stats

NOISE = 0.1

# ----------------------------------------------------------------------------- data


def true_function(x):
    return np.sin(3 * x) + 0.3 * np.cos(9 * x)


def make_data(n_train: int, n_test: int, seed: int):
    """Training inputs uniform on [-3, 3] with noisy targets; a test grid with noisy and
    noise-free targets."""
    rng = np.random.default_rng(seed)
    x_train = np.sort(rng.uniform(-3.0, 3.0, n_train))
    y_train = true_function(x_train) + NOISE * rng.standard_normal(n_train)
    x_test = np.linspace(-2.9, 2.9, n_test)
    f_test = true_function(x_test)
    y_test = f_test + NOISE * rng.standard_normal(n_test)
    return x_train, y_train, x_test, f_test, y_test


# ----------------------------------------------------------------------------- model


def kernel(log_params, xa, xb):
    """The squared-exponential kernel matrix ``(len(xa), len(xb))`` (no noise term)."""
    log_length, log_signal = log_params[0], log_params[1]
    sq = (xa[:, None] - xb[None, :]) ** 2
    return fnp.exp(2 * log_signal) * fnp.exp(-0.5 * sq * fnp.exp(-2 * log_length))


def train_covariance(log_params, x):
    n = x.shape[0]
    return kernel(log_params, x, x) + (fnp.exp(2 * log_params[2]) + 1e-10) * fnp.eye(n)


def negative_log_marginal_likelihood(log_params, x, y):
    """R&W algorithm 2.1: ``y^T K^-1 y / 2 + sum(log diag L) + n log(2 pi) / 2``."""
    factor = linalg.cho_factor(train_covariance(log_params, x), lower=True)
    alpha = linalg.cho_solve(factor, y)
    n = x.shape[0]
    return 0.5 * fnp.dot(y, alpha) + fnp.sum(fnp.log(fnp.diagonal(factor[0]))) + 0.5 * n * math.log(2 * math.pi)


def fit(x, y, log_params0, method="BFGS"):
    """The hyperparameters that maximise the marginal likelihood, from ``log_params0``."""
    return optimize.minimize(
        negative_log_marginal_likelihood, fnp.asarray(log_params0), (fnp.asarray(x), fnp.asarray(y)), method=method
    )


def predict(log_params, x, y, x_new):
    """Posterior mean and variance of ``y`` at ``x_new`` (R&W eqs. 2.25-2.26, noise added)."""
    x, y, x_new = fnp.asarray(x), fnp.asarray(y), fnp.asarray(x_new)
    factor = linalg.cho_factor(train_covariance(log_params, x), lower=True)
    cross = kernel(log_params, x, x_new)
    mean = cross.T @ linalg.cho_solve(factor, y)
    v = linalg.solve_triangular(factor[0], cross, lower=True)
    var = fnp.exp(2 * log_params[1]) - fnp.sum(v * v, axis=0) + fnp.exp(2 * log_params[2])
    return mean, var


# ----------------------------------------------------------------------------- main


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=200)
    parser.add_argument("--n-test", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default="BFGS", choices=["BFGS", "L-BFGS"])
    args = parser.parse_args(argv)

    x_train, y_train, x_test, f_test, y_test = make_data(args.n_train, args.n_test, args.seed)
    # start: length scale 1, signal 1, noise 0.3 (log space)
    log_params0 = np.log([1.0, 1.0, 0.3])
    start = time.perf_counter()
    res = fit(x_train, y_train, log_params0, args.method)
    seconds = time.perf_counter() - start
    log_params = res.x
    length, signal, noise = (float(v) for v in np.exp(np.asarray(log_params)))
    lml = -float(res.fun)
    # the same likelihood from the multivariate normal density
    cov = train_covariance(log_params, fnp.asarray(x_train))
    lml_mvn = float(stats.multivariate_normal.logpdf(fnp.asarray(y_train), fnp.zeros(args.n_train), cov))

    mean, var = predict(log_params, x_train, y_train, x_test)
    mean_np = np.asarray(mean)
    rmse_f = float(np.sqrt(np.mean((mean_np - f_test) ** 2)))
    rmse_y = float(np.sqrt(np.mean((mean_np - y_test) ** 2)))
    lpd = float(fnp.mean(stats.norm.logpdf(fnp.asarray(y_test), mean, fnp.sqrt(var))))

    print(f"fitted by {args.method} in {int(res.nit)} iterations, {int(res.nfev)} evaluations, {seconds:.2f} s "
          f"(status {int(res.status)})")
    print(f"length scale {length:.4f}, signal sd {signal:.4f}, noise sd {noise:.4f} (true noise {NOISE})")
    print(f"log marginal likelihood {lml:.6f} (multivariate_normal.logpdf: {lml_mvn:.6f})")
    print(f"test RMSE vs f: {rmse_f:.4f}; vs noisy targets: {rmse_y:.4f}; "
          f"mean log predictive density {lpd:.4f}")
    return {
        "result": res, "log_params0": log_params0, "length": length, "signal": signal, "noise": noise,
        "lml": lml, "lml_mvn": lml_mvn, "rmse_f": rmse_f, "rmse_y": rmse_y, "lpd": lpd,
        "data": (x_train, y_train, x_test, f_test, y_test),
    }


if __name__ == "__main__":
    main()
