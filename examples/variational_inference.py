"""Variational inference with reparameterised gamma and Dirichlet samples, checked against
the exact (conjugate) posteriors.

A research script for ``fgrad.random``'s implicit reparameterisation gradients (Figurnov,
Mohamed and Mnih 2018): gamma samples are differentiable in their concentration, and
Dirichlet samples (normalised gammas) in theirs, so a Monte Carlo estimate of the evidence
lower bound (ELBO) can be maximised by stochastic gradient ascent on the parameters of the
variational distribution ``q`` (Kingma and Welling's reparameterisation, extended to these
families).

Two models whose exact posteriors are known, so the fit can be checked:

* **Poisson rate.** Counts ``y_1..y_n ~ Poisson(lam)`` with the prior
  ``lam ~ Gamma(a0, b0)`` (shape, rate); the posterior is ``Gamma(a0 + sum y, b0 + n)``.
  ``q(lam) = Gamma(alpha, beta)``, sampled as ``lam = gamma(key, alpha) / beta``.
* **Categorical probabilities.** Counts ``c_1..c_K`` of ``K`` categories with the prior
  ``theta ~ Dirichlet(alpha0)``; the posterior is ``Dirichlet(alpha0 + c)``.
  ``q(theta) = Dirichlet(alpha)``, sampled by ``random.dirichlet(key, alpha)``.

Each ELBO is ``E_q[log p(data, z)] + H[q]``: the expectation by ``--samples``
reparameterised draws per step, the entropy in closed form. The variational parameters are
kept positive as ``exp`` of unconstrained ones, start at the prior, and are fitted by Adam with a cosine-decayed
learning rate in one jitted step per iteration (a new key per step, by ``fold_in``). The
families contain the exact posteriors, so the optimum is the posterior itself; the script
prints the fitted and exact parameters, and the KL divergence between them.

Run ``python examples/variational_inference.py --help`` for the options.

References:
    M. Figurnov, S. Mohamed, A. Mnih, "Implicit Reparameterization Gradients", NeurIPS 2018.
    D. P. Kingma, M. Welling, "Auto-Encoding Variational Bayes", ICLR 2014.
    D. M. Blei, A. Kucukelbir, J. D. McAuliffe, "Variational Inference: A Review for
    Statisticians", JASA 112(518), 2017.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, random
from fgrad.scipy.special import digamma, gammaln

# ----------------------------------------------------------------------------- data


def make_data(seed: int = 0, n_counts: int = 25, rate: float = 3.5, n_draws: int = 60):
    """Synthetic data: ``n_counts`` Poisson(``rate``) counts, and the category counts of
    ``n_draws`` draws from fixed probabilities over 4 categories."""
    k_rate, k_cat = random.split(random.key(seed))
    counts = np.asarray(random.poisson(k_rate, rate, (n_counts,)))
    probs = fnp.array([0.1, 0.2, 0.3, 0.4])
    draws = np.asarray(random.categorical(k_cat, fnp.log(probs), shape=(n_draws,)))
    return counts, np.bincount(draws, minlength=4)


# ----------------------------------------------------------------------------- models

A0, B0 = 2.0, 1.0  # the Gamma prior on the Poisson rate (shape, rate)
ALPHA0 = np.ones(4)  # the Dirichlet prior on the categorical probabilities (uniform)


def gamma_entropy(alpha, beta):
    """H[Gamma(alpha, beta)] = alpha - log beta + log Gamma(alpha) + (1 - alpha) psi(alpha)."""
    return alpha - fnp.log(beta) + gammaln(alpha) + (1.0 - alpha) * digamma(alpha)


def dirichlet_entropy(alpha):
    """H[Dirichlet(alpha)] = log B(alpha) + (a - K) psi(a) - sum (alpha_k - 1) psi(alpha_k),
    with ``a = sum alpha_k`` and ``log B(alpha) = sum log Gamma(alpha_k) - log Gamma(a)``."""
    total = fnp.sum(alpha)
    log_b = fnp.sum(gammaln(alpha)) - gammaln(total)
    k = alpha.shape[-1]
    return log_b + (total - k) * digamma(total) - fnp.sum((alpha - 1.0) * digamma(alpha))


def gamma_q(params):
    """``(alpha, beta)`` of ``q`` from its unconstrained params: the log of the shape and
    of the mean ``alpha / beta`` (orthogonal coordinates of the gamma family: the Fisher
    information has no cross term, so the shape is fitted without dragging the mean)."""
    alpha = fnp.exp(params["log_alpha"])
    return alpha, alpha / fnp.exp(params["log_mean"])


def poisson_elbo(params, key, counts, n_samples):
    """Monte Carlo ELBO of ``q = Gamma(alpha, beta)`` (:func:`gamma_q`) for the
    Poisson-rate model (up to the constant ``-sum log y_i!``)."""
    alpha, beta = gamma_q(params)
    lam = random.gamma(key, alpha, (n_samples,)) / beta  # reparameterised: d lam / d alpha
    log_lik = fnp.sum(counts) * fnp.log(lam) - counts.shape[0] * lam
    log_prior = (A0 - 1.0) * fnp.log(lam) - B0 * lam
    return fnp.mean(log_lik + log_prior) + gamma_entropy(alpha, beta)


def dirichlet_elbo(params, key, cat_counts, n_samples):
    """Monte Carlo ELBO of ``q = Dirichlet(exp(params["log_alpha"]))`` for the categorical
    model (up to the prior's normaliser)."""
    alpha = fnp.exp(params["log_alpha"])
    theta = random.dirichlet(key, alpha, (n_samples,))  # (n_samples, K), reparameterised
    log_joint = fnp.sum((cat_counts + ALPHA0 - 1.0) * fnp.log(theta), axis=-1)
    return fnp.mean(log_joint) + dirichlet_entropy(alpha)


def gamma_kl(a, b, a2, b2):
    """KL(Gamma(a, b) || Gamma(a2, b2)), shape-rate parameterisation."""
    from scipy.special import digamma as psi, gammaln as lg

    return (a - a2) * psi(a) - lg(a) + lg(a2) + a2 * (np.log(b) - np.log(b2)) + a * (b2 - b) / b


def dirichlet_kl(alpha, alpha2):
    """KL(Dirichlet(alpha) || Dirichlet(alpha2))."""
    from scipy.special import digamma as psi, gammaln as lg

    s, s2 = alpha.sum(), alpha2.sum()
    return (
        lg(s) - lg(alpha).sum() - lg(s2) + lg(alpha2).sum()
        + np.sum((alpha - alpha2) * (psi(alpha) - psi(s)))
    )


# ----------------------------------------------------------------------------- fitting


def fit(elbo, params, data, *, steps: int, n_samples: int, lr: float, seed: int):
    """Maximise ``elbo(params, key, data, n_samples)`` by Adam; returns the final params
    and the ELBO estimates along the way."""
    opt = optim.adam(optim.cosine_decay_schedule(lr, steps, alpha=0.02))
    state = opt.init(params)
    base = random.key(seed)

    @fgrad.jit
    def step(params, state, key):
        value, grads = fgrad.value_and_grad(lambda p: -elbo(p, key, data, n_samples))(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, -value

    history = []
    for i in range(steps):
        params, state, value = step(params, state, random.fold_in(base, i))
        history.append(float(value))
    return params, history


def run(steps: int = 500, n_samples: int = 64, lr: float = 0.2, seed: int = 0, verbose=True):
    """Fit both models; returns the fitted and exact posterior parameters."""
    counts, cat_counts = make_data(seed)
    exact_gamma = (A0 + counts.sum(), B0 + len(counts))
    exact_dirichlet = ALPHA0 + cat_counts
    t0 = time.perf_counter()
    p_gamma, h_gamma = fit(
        poisson_elbo,
        {"log_alpha": fnp.array(np.log(A0)), "log_mean": fnp.array(np.log(A0 / B0))},  # the prior
        fnp.asarray(counts, dtype="float64"),
        steps=steps, n_samples=n_samples, lr=lr, seed=seed + 1,
    )
    p_dir, h_dir = fit(
        dirichlet_elbo,
        {"log_alpha": fnp.log(fnp.asarray(ALPHA0))},  # the prior
        fnp.asarray(cat_counts, dtype="float64"),
        steps=steps, n_samples=n_samples, lr=lr, seed=seed + 2,
    )
    seconds = time.perf_counter() - t0
    fitted_gamma = tuple(float(v) for v in gamma_q(p_gamma))
    fitted_dirichlet = np.exp(np.asarray(p_dir["log_alpha"]))
    result = {
        "fitted_gamma": fitted_gamma,
        "exact_gamma": exact_gamma,
        "fitted_dirichlet": fitted_dirichlet,
        "exact_dirichlet": exact_dirichlet,
        "kl_gamma": float(gamma_kl(*fitted_gamma, *exact_gamma)),
        "kl_dirichlet": float(dirichlet_kl(fitted_dirichlet, exact_dirichlet)),
        "elbo_gamma": float(np.mean(h_gamma[-50:])),
        "elbo_dirichlet": float(np.mean(h_dir[-50:])),
        "seconds": seconds,
    }
    if verbose:
        print(f"Poisson rate: {len(counts)} counts, sum {counts.sum()}; prior Gamma({A0}, {B0})")
        print(f"  fitted q = Gamma({fitted_gamma[0]:.3f}, {fitted_gamma[1]:.3f})")
        print(f"  exact posterior Gamma({exact_gamma[0]:.3f}, {exact_gamma[1]:.3f})")
        print(f"  posterior mean: fitted {fitted_gamma[0] / fitted_gamma[1]:.4f}, "
              f"exact {exact_gamma[0] / exact_gamma[1]:.4f}; KL(q || p) = {result['kl_gamma']:.2e}")
        print(f"Categorical probabilities: counts {cat_counts.tolist()}; prior Dirichlet(1, 1, 1, 1)")
        print(f"  fitted q = Dirichlet({np.array2string(fitted_dirichlet, precision=3)})")
        print(f"  exact posterior Dirichlet({np.array2string(exact_dirichlet.astype(float), precision=3)})")
        print(f"  KL(q || p) = {result['kl_dirichlet']:.2e}")
        print(f"{steps} steps of {n_samples} samples each, both fits: {seconds:.1f} s")
    return result


def _positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    value = float(text)
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def main(argv=None) -> dict:
    """The command line: ``--steps``, ``--samples``, ``--lr``, ``--seed``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=_positive_int, default=500, help="Adam steps per fit")
    parser.add_argument("--samples", type=_positive_int, default=64,
                        help="Monte Carlo samples of q per ELBO estimate")
    parser.add_argument("--lr", type=_positive_float, default=0.2, help="initial learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the keys")
    args = parser.parse_args(argv)
    return run(args.steps, args.samples, args.lr, args.seed)


if __name__ == "__main__":
    main()
