"""The Gaussian-process example at reduced size: its marginal-likelihood fit equals
scikit-learn's GaussianProcessRegressor on the same model and data."""

import numpy as np
import pytest

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def gp(load_example):
    return load_example("gaussian_process")


def test_fit_matches_scikit_learn(gp):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    out = gp.main(["--n-train", "60", "--n-test", "100", "--seed", "0"])
    res = out["result"]
    assert bool(res.success) and int(res.status) == 0 and int(res.nit) < 40
    x_train, y_train, x_test, f_test, _ = out["data"]
    # the same model: s_f^2 RBF(l) + s_n^2 white noise, the same 1e-10 jitter, the same start
    length0, signal0, noise0 = np.exp(out["log_params0"])
    kernel = ConstantKernel(signal0**2, (1e-5, 1e5)) * RBF(length0, (1e-5, 1e5)) + WhiteKernel(noise0**2, (1e-8, 1e3))
    reference = GaussianProcessRegressor(kernel, alpha=1e-10).fit(x_train[:, None], y_train)
    params = reference.kernel_.get_params()
    np.testing.assert_allclose(
        [out["length"], out["signal"], out["noise"]],
        [params["k1__k2__length_scale"], np.sqrt(params["k1__k1__constant_value"]), np.sqrt(params["k2__noise_level"])],
        rtol=2e-3,
    )
    # both maximise the same likelihood: equal at their optima (to the optimisers' tolerance)
    np.testing.assert_allclose(out["lml"], reference.log_marginal_likelihood_value_, rtol=1e-6)
    assert out["lml"] >= reference.log_marginal_likelihood_value_ - 1e-6
    # the likelihood through cho_factor/cho_solve equals multivariate_normal.logpdf
    np.testing.assert_allclose(out["lml"], out["lml_mvn"], rtol=1e-10)
    mean, var = gp.predict(res.x, x_train, y_train, x_test)
    want_mean, want_sd = reference.predict(x_test[:, None], return_std=True)
    np.testing.assert_allclose(np.asarray(mean), want_mean, atol=1e-3)
    np.testing.assert_allclose(np.sqrt(np.asarray(var)), want_sd, rtol=1e-2)
    # the posterior mean recovers f well inside the noise: RMSE well under the noise sd 0.1
    assert out["rmse_f"] < 0.1
    np.testing.assert_allclose(out["noise"], gp.NOISE, rtol=0.3)
