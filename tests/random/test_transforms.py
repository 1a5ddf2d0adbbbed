"""fgrad.random's distributions under jit, vmap and grad, their errors, and the module's names.

Each sampler gives the same values eagerly, under ``jit`` and, per example, under ``vmap``
over a batch of keys (each example's values are exactly those of its own key).
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.errors import DTypeError, ShapeError

COV = np.array([[2.0, 0.5], [0.5, 1.0]])

SAMPLERS = {
    "gamma": lambda k: random.gamma(k, fnp.array([0.3, 3.0]), (4, 2)),
    "loggamma": lambda k: random.loggamma(k, 0.2, (3,)),
    "beta": lambda k: random.beta(k, 0.5, fnp.array([1.0, 2.0])),
    "dirichlet": lambda k: random.dirichlet(k, fnp.array([1.0, 2.0, 0.3]), (2,)),
    "poisson": lambda k: random.poisson(k, fnp.array([1.0, 30.0]), (3, 2)),
    "binomial": lambda k: random.binomial(k, 50, fnp.array([0.1, 0.7]), (3, 2)),
    "geometric": lambda k: random.geometric(k, 0.3, (5,)),
    "exponential": lambda k: random.exponential(k, (5,)),
    "laplace": lambda k: random.laplace(k, (5,)),
    "logistic": lambda k: random.logistic(k, (5,), "float32"),
    "cauchy": lambda k: random.cauchy(k, (5,)),
    "gumbel": lambda k: random.gumbel(k, (5,)),
    "t": lambda k: random.t(k, 4.0, (5,)),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (5,)),
    "rademacher": lambda k: random.rademacher(k, (5,)),
    "ball": lambda k: random.ball(k, 3, 1.5, (2,)),
    "orthogonal": lambda k: random.orthogonal(k, 3, (2,)),
    "orthogonal_wide": lambda k: random.orthogonal(k, 2, m=4),
    **{
        f"multivariate_normal_{m}": (
            lambda k, m=m: random.multivariate_normal(k, fnp.zeros(2), fnp.asarray(COV), (3,),
                                                      method=m)
        )
        for m in ("cholesky", "eigh", "svd")
    },
}
INTEGER = {"poisson", "geometric", "rademacher"}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_values_eagerly_under_jit_and_per_example_under_vmap(name):
    f = SAMPLERS[name]
    keys = random.split(random.key(3), 3)
    eager = [np.asarray(f(k)) for k in keys]
    jitted = fgrad.jit(f)
    for k, e in zip(keys, eager):
        np.testing.assert_array_equal(np.asarray(jitted(k)), e)
    assert jitted.cache_info().misses == 1  # a new key reuses the compiled graph
    batched = np.asarray(fgrad.vmap(f)(keys))
    assert batched.dtype == eager[0].dtype
    assert (batched.dtype.kind in "iu") == (name in INTEGER)
    for i, e in enumerate(eager):
        # the multivariate normal's batched matmul may round differently; the rest are equal
        np.testing.assert_allclose(batched[i], e, rtol=1e-15, atol=1e-15)


def test_jit_with_traced_parameters():
    k = random.key(4)
    a = fnp.array([0.5, 2.0, 9.0])
    np.testing.assert_array_equal(
        np.asarray(fgrad.jit(lambda k, a: random.gamma(k, a))(k, a)), np.asarray(random.gamma(k, a))
    )
    lam = fnp.array([0.5, 12.0])
    np.testing.assert_array_equal(
        np.asarray(fgrad.jit(lambda k, lam: random.poisson(k, lam, (4, 2)))(k, lam)),
        np.asarray(random.poisson(k, lam, (4, 2))),
    )


def test_vmap_over_concentrations_with_a_shared_key():
    k = random.key(5)
    a = fnp.array([0.5, 2.0, 9.0])
    batched = np.asarray(fgrad.vmap(lambda a_: random.gamma(k, a_, (4,)))(a))
    for i in range(3):
        np.testing.assert_array_equal(batched[i], np.asarray(random.gamma(k, a[i], (4,))))


def loss(a, key):
    return fnp.mean(random.gamma(key, a, (6,)) ** 2)


def test_gamma_gradient_compositions():
    key = random.key(6)
    keys = random.split(key, 3)
    a = fnp.array(1.7)
    eager = float(fgrad.grad(loss)(a, key))
    # grad of jit, jit of grad
    np.testing.assert_allclose(float(fgrad.grad(fgrad.jit(loss))(a, key)), eager, rtol=1e-13)
    np.testing.assert_allclose(float(fgrad.jit(fgrad.grad(loss))(a, key)), eager, rtol=1e-13)
    # vmap of grad over keys equals the per-key gradients; jit of vmap the same
    per_key = [float(fgrad.grad(loss)(a, k)) for k in keys]
    vg = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))(a, keys)
    np.testing.assert_allclose(np.asarray(vg), per_key, rtol=1e-13)
    jvg = fgrad.jit(fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0)))(a, keys)
    np.testing.assert_allclose(np.asarray(jvg), per_key, rtol=1e-13)
    # forward mode equals reverse mode
    _, tangent = fgrad.jvp(lambda a_: loss(a_, key), (a,), (fnp.array(1.0),))
    np.testing.assert_allclose(float(tangent), eager, rtol=1e-13)


def test_dirichlet_gradient_under_vmap_of_keys():
    alpha = fnp.array([0.5, 1.0, 2.0])
    keys = random.split(random.key(7), 2)
    f = lambda al, k: random.dirichlet(k, al)[0]  # noqa: E731
    batched = fgrad.vmap(fgrad.grad(f), in_axes=(None, 0))(alpha, keys)
    for i, k in enumerate(keys):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(fgrad.grad(f)(alpha, k)),
                                   rtol=1e-13)


def test_dtypes_follow_the_dtype_argument():
    k = random.key(8)
    assert random.gamma(k, 2.0, (2,), "float32").dtype == np.float32
    assert random.beta(k, 2.0, 2.0, (2,), np.float32).dtype == np.float32
    assert random.dirichlet(k, fnp.ones(3), dtype="float32").dtype == np.float32
    assert random.poisson(k, 3.0, (2,), "int32").dtype == np.int32
    assert random.binomial(k, 5, 0.5, (2,), "float32").dtype == np.float32
    assert random.geometric(k, 0.5, (2,), "int16").dtype == np.int16
    assert random.t(k, 3.0, (2,), "float32").dtype == np.float32
    assert random.ball(k, 2, dtype="float32").dtype == np.float32
    assert random.orthogonal(k, 2, dtype="float32").dtype == np.float32
    cov = fnp.asarray(COV)
    assert random.multivariate_normal(k, fnp.zeros(2), cov, dtype="float32").dtype == np.float32
    # float32 gamma samples round the float64 ones
    np.testing.assert_allclose(np.asarray(random.gamma(k, 2.0, (5,), "float32")),
                               np.asarray(random.gamma(k, 2.0, (5,))), rtol=1e-7)


def test_default_shapes_are_the_parameters_broadcast_shape():
    k = random.key(9)
    assert random.gamma(k, fnp.ones((2, 3))).shape == (2, 3)
    assert random.beta(k, fnp.ones((3,)), fnp.ones((2, 1))).shape == (2, 3)
    assert random.dirichlet(k, fnp.ones((4, 3))).shape == (4, 3)
    assert random.poisson(k, fnp.ones(4)).shape == (4,)
    assert random.binomial(k, fnp.ones(2) * 5, fnp.full((3, 1), 0.5)).shape == (3, 2)
    assert random.t(k, 3.0).shape == ()
    assert random.multivariate_normal(k, fnp.zeros((5, 2)), fnp.asarray(COV)).shape == (5, 2)
    assert random.ball(k, 4).shape == (4,)
    assert random.orthogonal(k, 3).shape == (3, 3)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda k: random.gamma(k, -1.0), ValueError, "a > 0"),
        (lambda k: random.gamma(k, fnp.ones(3), (2,)), ShapeError, "cannot hold"),
        (lambda k: random.gamma(k, 1.0, dtype="int32"), DTypeError, "float"),
        (lambda k: random.beta(k, 1.0, 0.0), ValueError, "a > 0"),
        (lambda k: random.dirichlet(k, 1.0), ShapeError, "at least one axis"),
        (lambda k: random.poisson(k, -2.0), ValueError, "lam >= 0"),
        (lambda k: random.poisson(k, 2.0, dtype="float32"), DTypeError, "integer"),
        (lambda k: random.binomial(k, 2.5, 0.5), ValueError, "integer"),
        (lambda k: random.binomial(k, 3, 1.5), ValueError, "0 <= p <= 1"),
        (lambda k: random.geometric(k, 0.0), ValueError, "0 < p <= 1"),
        (lambda k: random.t(k, 0.0), ValueError, "df > 0"),
        (lambda k: random.ball(k, 0), ValueError, "d"),
        (lambda k: random.ball(k, 2, p=-1.0), ValueError, "p"),
        (lambda k: random.orthogonal(k, 2.5), DTypeError, "n"),
        (lambda k: random.rademacher(k, dtype="uint8"), DTypeError, "signed"),
        (lambda k: random.multivariate_normal(k, fnp.zeros(2), fnp.eye(3)), ShapeError, "cov"),
        (lambda k: random.multivariate_normal(k, fnp.zeros(2), fnp.eye(2), method="qr"),
         ValueError, "method"),
        (lambda k: random.exponential(k, (2,), "int64"), DTypeError, "float"),
        (lambda k: random.gamma(5, 1.0), TypeError, "key"),
    ],
)
def test_errors_name_the_function_and_the_fix(call, error, match):
    with pytest.raises(error, match=match) as info:
        call(random.key(0))
    assert "random." in str(info.value)


def test_a_traced_bad_concentration_raises_when_the_compiled_function_runs():
    with pytest.raises(ValueError, match="a > 0"):
        fgrad.jit(lambda k, a: random.gamma(k, a))(random.key(0), fnp.array([1.0, -1.0]))


def test_dir_shows_only_public_names():
    names = dir(random)
    assert names == sorted(random.__all__)
    for helper in ("np", "fnp", "Tracer", "Any", "backend"):
        assert helper not in names
    for name in random.__all__:
        assert callable(getattr(random, name))
    assert random.PRNGKey is random.key


# --------------------------------------------------------------------------- devices


def _a(x):
    return np.asarray(x.get() if hasattr(x, "get") else x)


@pytest.mark.gpu
def test_same_streams_on_numpy_and_cupy(xp):
    if xp is np:
        pytest.skip("compares cupy with numpy")
    kc, kn = random.key(11, device="cuda"), random.key(11)
    exact = (
        lambda k: random.poisson(k, np.array([0.5, 4.0, 40.0, 900.0]), (250, 4)),
        lambda k: random.binomial(k, 60, np.array([0.05, 0.5, 0.9]), (300, 3)),
        lambda k: random.rademacher(k, (100,)),
        lambda k: random.geometric(k, 0.2, (100,)),
    )
    for draw in exact:  # counts: the same integers (decisions in float64 agree to rounding)
        np.testing.assert_array_equal(_a(draw(kc)), _a(draw(kn)))
    close = (
        lambda k: random.gamma(k, np.array([0.2, 1.0, 7.5, 300.0]), (250, 4)),
        lambda k: random.loggamma(k, 0.01, (100,)),
        lambda k: random.beta(k, 0.5, 2.0, (100,)),
        lambda k: random.dirichlet(k, np.array([0.3, 1.0, 4.0]), (100,)),
        lambda k: random.exponential(k, (100,)),
        lambda k: random.laplace(k, (100,)),
        lambda k: random.logistic(k, (100,)),
        lambda k: random.cauchy(k, (100,)),
        lambda k: random.gumbel(k, (100,)),
        lambda k: random.t(k, 3.0, (100,)),
        lambda k: random.ball(k, 3, shape=(50,)),
        lambda k: random.orthogonal(k, 4, (10,)),
        lambda k: random.multivariate_normal(k, np.zeros(2), COV, (100,)),
    )
    for draw in close:  # transcendental functions: libm differences, rounding only
        np.testing.assert_allclose(_a(draw(kc)), _a(draw(kn)), rtol=1e-10, atol=1e-12)
    # the implicit gradient too
    g = lambda k: fgrad.grad(lambda a: fnp.sum(random.gamma(k, a, (64,))))(fnp.asarray(2.5, device=k.device))  # noqa: E731
    np.testing.assert_allclose(_a(g(kc)), _a(g(kn)), rtol=1e-10)
