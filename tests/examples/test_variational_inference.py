"""The variational-inference example at reduced size: reparameterised gamma and Dirichlet
fits reach the exact conjugate posteriors."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def vi(load_example):
    return load_example("variational_inference")


@pytest.fixture(scope="module")
def result(vi):
    return vi.run(steps=150, n_samples=64, lr=0.2, seed=0, verbose=False)


def test_data_and_exact_posteriors(vi, result):
    counts, cat_counts = vi.make_data(0)
    # conjugacy: Gamma(a0 + sum y, b0 + n) and Dirichlet(alpha0 + c)
    assert result["exact_gamma"] == (vi.A0 + counts.sum(), vi.B0 + len(counts))
    np.testing.assert_array_equal(result["exact_dirichlet"], vi.ALPHA0 + cat_counts)
    assert cat_counts.sum() == 60 and len(counts) == 25


def test_gamma_fit_reaches_the_exact_posterior(result):
    (a, b), (a_star, b_star) = result["fitted_gamma"], result["exact_gamma"]
    # from the prior Gamma(2, 1): the shape grows fifty-fold to within 15%, the mean to 2%
    assert abs(a / b - a_star / b_star) < 0.02 * a_star / b_star
    assert abs(a - a_star) < 0.15 * a_star
    assert result["kl_gamma"] < 5e-3


def test_dirichlet_fit_reaches_the_exact_posterior(result):
    fitted, exact = result["fitted_dirichlet"], result["exact_dirichlet"]
    np.testing.assert_allclose(fitted, exact, rtol=0.1)
    np.testing.assert_allclose(fitted / fitted.sum(), exact / exact.sum(), atol=0.01)
    assert result["kl_dirichlet"] < 5e-3


def test_entropies_match_scipy(vi):
    import scipy.stats as st

    import fgrad.numpy as fnp

    h = float(vi.gamma_entropy(fnp.array(3.5), fnp.array(2.0)))
    np.testing.assert_allclose(h, st.gamma(3.5, scale=1 / 2.0).entropy(), rtol=1e-12)
    alpha = np.array([0.5, 2.0, 7.0])
    h = float(vi.dirichlet_entropy(fnp.asarray(alpha)))
    np.testing.assert_allclose(h, st.dirichlet(alpha).entropy(), rtol=1e-12)


def test_kl_helpers_are_zero_at_equality_and_positive_elsewhere(vi):
    assert abs(vi.gamma_kl(3.0, 2.0, 3.0, 2.0)) < 1e-12
    assert vi.gamma_kl(3.0, 2.0, 4.0, 2.0) > 0
    alpha = np.array([1.0, 2.0, 3.0])
    assert abs(vi.dirichlet_kl(alpha, alpha)) < 1e-12
    assert vi.dirichlet_kl(alpha, alpha + 1) > 0


def test_command_line_options(vi, capsys):
    out = vi.main(["--steps", "3", "--samples", "2"])
    assert set(out) >= {"fitted_gamma", "exact_gamma", "fitted_dirichlet", "exact_dirichlet"}
    printed = capsys.readouterr().out
    assert "exact posterior Gamma(105.000, 26.000)" in printed
    assert "3 steps of 2 samples each" in printed
    with pytest.raises(SystemExit):
        vi.main(["--steps", "0"])
