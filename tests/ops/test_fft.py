"""``fgrad.numpy.fft``: values and dtypes against numpy, derivatives against finite
differences and closed forms, transforms (vmap, jit, grad of jit, jvp of vmap), bad input.

Complex-valued functions are differentiated as functions of the real and imaginary parts
of their inputs, returning the real and imaginary parts of their outputs (:func:`_split`):
``check_grads`` compares complex values bilinearly, which holds only for holomorphic
functions, and rfft, irfft, hfft and ihfft are not (they take real input or discard
imaginary parts). The split checks the whole chain in JAX's convention, a VJP being the
transpose of the JVP under ``Re(sum(ct * t))``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

F = fnp.fft
NORMS = [None, "backward", "ortho", "forward"]
C2C = ["fft", "ifft"]
R2C = ["rfft", "ihfft"]
C2R = ["irfft", "hfft"]
ND = ["fftn", "ifftn", "fft2", "ifft2"]
ND_R2C = ["rfftn", "rfft2"]
ND_C2R = ["irfftn", "irfft2"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _sample(shape, kind, dtype=np.float64, seed=0):
    rng = _rng(seed)
    x = rng.standard_normal(shape)
    if kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
        dtype = np.result_type(dtype, np.complex64)
    return x.astype(dtype)


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape}, numpy's {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype}, numpy's {want.dtype}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=_tol(dtype) * scale)


# ------------------------------------------------------------------------ values vs numpy

ONE_D = [(name, kind) for name in C2C + C2R for kind in ("real", "complex")] + [
    (name, "real") for name in R2C
]


@pytest.mark.parametrize("name,kind", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_dimensional_transforms_equal_numpy(name, kind, norm, dtype):
    x = _sample((3, 6, 5), kind, dtype, seed=len(name))
    fn, ref = getattr(F, name), getattr(np.fft, name)
    # default n; n larger and smaller than the axis; negative and positive axes
    for kwargs in ({}, {"n": 9, "axis": 1}, {"n": 3, "axis": -2}, {"n": 4, "axis": 0}, {"n": 1}):
        _close(fn(fnp.asarray(x), norm=norm, **kwargs), ref(x, norm=norm, **kwargs), dtype)


ND_CASES = [(name, kind) for name in ND + ND_C2R for kind in ("real", "complex")] + [
    (name, "real") for name in ND_R2C
]


@pytest.mark.parametrize("name,kind", ND_CASES)
@pytest.mark.parametrize("norm", NORMS)
def test_nd_transforms_equal_numpy(name, kind, norm):
    dtype = np.float32 if norm == "ortho" else np.float64
    x = _sample((4, 3, 6), kind, dtype, seed=len(name) + 7)
    fn, ref = getattr(F, name), getattr(np.fft, name)
    cases = [{}, {"s": (5, 4), "axes": (0, -1)}, {"s": (2, 7), "axes": (-1, 1)}, {"axes": (1, 0)}]
    if not name.endswith("2"):
        cases += [{"axes": (2,)}, {"s": (3, -1, 8), "axes": (2, 0, 1)}]
    for kwargs in cases:
        _close(fn(fnp.asarray(x), norm=norm, **kwargs), ref(x, norm=norm, **kwargs), dtype)


DTYPES = ["bool", "int8", "int64", "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_are_numpys(dtype):
    """numpy 2's result dtypes: float32 (and float16) give complex64, integers complex128;
    irfft keeps float16 over one axis and gives float32 over two."""
    x = np.ones((2, 4), dtype)
    names = C2C + C2R + ND + ND_C2R
    if np.dtype(dtype).kind != "c":
        names += R2C + ND_R2C
    for name in names:
        want = getattr(np.fft, name)(x).dtype
        got = getattr(F, name)(fnp.asarray(x))
        assert got.dtype == want, f"{name}({dtype}) gave {got.dtype}, numpy {want}"
        jitted = fgrad.jit(getattr(F, name))(fnp.asarray(x))
        assert jitted.dtype == want, f"jit({name})({dtype}) gave {jitted.dtype}, numpy {want}"


def test_special_lengths_and_axes_follow_numpy():
    x = _sample((3, 5), "complex")
    # irfft of odd length: n = 2m - 1 inverts an odd rfft
    r = _sample((7,), "real")
    np.testing.assert_allclose(np.asarray(F.irfft(F.rfft(fnp.asarray(r)), n=7)), r, atol=1e-14)
    # irfft's imaginary parts at frequency 0 and n/2 are discarded, as numpy's
    _close(F.irfft(fnp.asarray(x), n=8), np.fft.irfft(x, n=8), np.float64)
    # no axes: fftn returns its input (numpy), rfftn needs an axis
    _close(F.fftn(fnp.asarray(x), axes=()), np.fft.fftn(x, axes=()), np.float64)
    # s with -1 takes the whole axis; for irfftn's last axis that is m, not 2 (m - 1)
    _close(F.irfftn(fnp.asarray(x), s=(-1, -1), axes=(0, 1)), np.fft.irfftn(x, s=(-1, -1), axes=(0, 1)), np.float64)
    # s without axes transforms the last len(s) axes, with numpy 2's DeprecationWarning
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = F.fftn(fnp.asarray(x), s=(4,))
    assert any(issubclass(w.category, DeprecationWarning) for w in got_warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _close(got, np.fft.fftn(x, s=(4,)), np.float64)
    # integer and list input
    _close(F.fft([1, 2, 3]), np.fft.fft([1, 2, 3]), np.float64)


def test_frequencies_and_shifts_equal_numpy():
    for n in (1, 4, 5):
        for d in (1.0, 0.25):
            _close(F.fftfreq(n, d), np.fft.fftfreq(n, d), np.float64)
            _close(F.rfftfreq(n, d=d), np.fft.rfftfreq(n, d=d), np.float64)
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, -1, (1, 0), ()):
        np.testing.assert_array_equal(np.asarray(F.fftshift(x, axes)), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(np.asarray(F.ifftshift(x, axes=axes)), np.fft.ifftshift(x, axes=axes))
    np.testing.assert_array_equal(np.asarray(F.ifftshift(F.fftshift(x))), x)
    # d as a Tensor: the frequencies are differentiable in it (d/dd of k / (n d) = -k / (n d^2))
    grad = fgrad.grad(lambda d: fnp.sum(F.fftfreq(4, d)))(fnp.asarray(0.5))
    np.testing.assert_allclose(np.asarray(grad), -np.sum(np.fft.fftfreq(4)) / 0.25, atol=1e-15)
    grad = fgrad.grad(lambda d: fnp.sum(F.rfftfreq(4, d)))(fnp.asarray(0.5))
    np.testing.assert_allclose(np.asarray(grad), -np.sum(np.fft.rfftfreq(4)) / 0.25)


# ------------------------------------------------------------------------ derivatives


def _split(f, complex_input):
    """``f`` as a function of real arrays: the real and imaginary parts of a complex input
    (or the real input itself), returning the real and imaginary parts of its output."""

    def parts(out):
        if np.dtype(out.dtype).kind == "c":
            return fnp.real(out), fnp.imag(out)
        return (out,)

    if complex_input:
        return lambda re, im: parts(f(re + 1j * im))
    return lambda x: parts(f(x))


GRAD_CASES = [
    ("fft", {"n": 7}),
    ("fft", {"n": 3, "axis": 0, "norm": "ortho"}),
    ("ifft", {"norm": "forward"}),
    ("ifft", {"n": 6, "axis": -2}),
    ("rfft", {}),
    ("rfft", {"n": 7, "axis": 0, "norm": "ortho"}),
    ("rfft", {"n": 4, "norm": "forward"}),
    ("irfft", {}),
    ("irfft", {"n": 5, "norm": "ortho"}),
    ("irfft", {"n": 9, "axis": 0, "norm": "forward"}),
    ("hfft", {"n": 7}),
    ("hfft", {"axis": 0, "norm": "ortho"}),
    ("ihfft", {"n": 6, "norm": "forward"}),
    ("ihfft", {"axis": 0}),
    ("fftn", {"s": (3, 6), "axes": (1, 0)}),
    ("ifftn", {"norm": "ortho"}),
    ("fft2", {"norm": "forward"}),
    ("ifft2", {"s": (2, 7)}),
    ("rfftn", {"s": (5, 3), "axes": (1, 0), "norm": "ortho"}),
    ("rfft2", {}),
    ("irfftn", {"s": (4, 5), "axes": (0, 1)}),
    ("irfftn", {"axes": (0,), "norm": "forward"}),
    ("irfft2", {"s": (3, 6), "norm": "ortho"}),
]


@pytest.mark.parametrize("name,kwargs", GRAD_CASES, ids=[f"{n}-{k}" for n, k in GRAD_CASES])
def test_derivatives_match_finite_differences(name, kwargs):
    fn = getattr(F, name)
    f = lambda x: fn(x, **kwargs)  # noqa: E731
    z = _sample((4, 5), "complex", seed=len(name))
    check_grads(_split(f, False), (fnp.asarray(z.real),), order=2, modes=("rev", "fwd"))
    if name not in R2C + ND_R2C:
        check_grads(
            _split(f, True), (fnp.asarray(z.real), fnp.asarray(z.imag)), order=2, modes=("rev", "fwd")
        )


def test_float32_derivatives_match_finite_differences():
    z = _sample((6,), "complex", np.float32)
    check_grads(_split(F.rfft, False), (fnp.asarray(z.real),), order=1, modes=("rev", "fwd"))
    check_grads(
        _split(lambda x: F.irfft(x, n=10), True),
        (fnp.asarray(z.real), fnp.asarray(z.imag)),
        order=1,
        modes=("rev", "fwd"),
    )


SCALE = {None: 1.0, "backward": 1.0, "ortho": 0.0, "forward": -1.0}  # log_N of |F|^2 / N


@pytest.mark.parametrize("norm", NORMS)
def test_parseval_gradients(norm):
    """sum |fft(x)|^2 = c N sum |x|^2 with c = N, 1, 1/N for backward, ortho, forward, so
    its gradient is 2 c x for real x and 2 c conj(x) for complex x (JAX's convention);
    the same for ifft with c inverted, and for rfft once its entries are weighted by how
    many frequencies each stands for (1, 2, ..., 2, 1)."""
    n = 6
    c = float(n) ** SCALE[norm]
    x = _sample((n,), "real", seed=3)
    z = _sample((n,), "complex", seed=4)
    energy = lambda y: fnp.sum(fnp.abs(y) ** 2)  # noqa: E731
    for value in (x, z):
        g = fgrad.grad(lambda v: energy(F.fft(v, norm=norm)))(fnp.asarray(value))
        np.testing.assert_allclose(np.asarray(g), 2 * c * np.conj(value), atol=1e-12)
        g = fgrad.grad(lambda v: energy(F.ifft(v, norm=norm)))(fnp.asarray(value))
        np.testing.assert_allclose(np.asarray(g), 2 / c * np.conj(value), atol=1e-12)
        g = fgrad.grad(lambda v: energy(F.fftn(v[None], norm=norm)))(fnp.asarray(value))
        np.testing.assert_allclose(np.asarray(g), 2 * c * np.conj(value), atol=1e-12)
    w = fnp.asarray([1.0, 2.0, 2.0, 1.0])  # n = 6: frequencies 0, 1 (and 5), 2 (and 4), 3
    g = fgrad.grad(lambda v: fnp.sum(w * fnp.abs(F.rfft(v, norm=norm)) ** 2))(fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), 2 * c * x, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [6, 7])
def test_irfft_gradient_closed_forms(norm, n):
    """d/dX sum(irfft(X) * y) = conj(w * rfft(y)) * s (JAX's irfft transpose), with w the
    Hermitian weights and s the scale of rfft under the swapped norm; and for X with real
    entries at 0 and n/2, sum irfft(X)^2 = s' sum w |X|^2, whose gradient is 2 s' w conj(X)."""
    m = n // 2 + 1
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    s = {None: 1 / n, "backward": 1 / n, "ortho": n**-0.5, "forward": 1.0}[norm]
    y = _sample((n,), "real", seed=5)
    X = _sample((m,), "complex", seed=6)
    g = fgrad.grad(lambda v: fnp.sum(F.irfft(v, n=n, norm=norm) * y))(fnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), np.conj(w * np.fft.rfft(y)) * s, atol=1e-12)
    X[0] = X[0].real
    if n % 2 == 0:
        X[-1] = X[-1].real
    g = fgrad.grad(lambda v: fnp.sum(F.irfft(v, n=n, norm=norm) ** 2))(fnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), 2 * s * s * n * w * np.conj(X), atol=1e-12)
    # hfft is irfft of the conjugate under the swapped norm
    g = fgrad.grad(lambda v: fnp.sum(F.hfft(v, n=n, norm=norm) * y))(fnp.asarray(X))
    s_h = {None: 1.0, "backward": 1.0, "ortho": n**-0.5, "forward": 1 / n}[norm]
    np.testing.assert_allclose(np.asarray(g), w * np.fft.rfft(y) * s_h, atol=1e-12)


# ------------------------------------------------------------------------ transforms

TRANSFORM_CASES = [
    ("fft", {"n": 5}, "complex"),
    ("rfft", {"n": 7, "norm": "ortho"}, "real"),
    ("irfft", {"n": 5}, "complex"),
    ("hfft", {"norm": "forward"}, "complex"),
    ("ihfft", {}, "real"),
    ("fft2", {"s": (3, 4)}, "complex"),
    ("rfftn", {"axes": (0, 1)}, "real"),
    ("irfft2", {"norm": "ortho"}, "complex"),
    ("ifftn", {"axes": (1,)}, "real"),
]


def _loss(name, kwargs):
    fn = getattr(F, name)
    return lambda x: fnp.sum(fnp.abs(fn(x, **kwargs)) ** 2 * 0.5 + fnp.real(fn(x, **kwargs)))


@pytest.mark.parametrize("name,kwargs,kind", TRANSFORM_CASES, ids=[c[0] for c in TRANSFORM_CASES])
def test_vmap_jit_grad_of_jit_and_jvp_of_vmap(name, kwargs, kind):
    fn = getattr(F, name)
    f = lambda x: fn(x, **kwargs)  # noqa: E731
    batch = _sample((3, 4, 6), kind, seed=11)
    xs = [fnp.asarray(b) for b in batch]
    loop = np.stack([np.asarray(f(x)) for x in xs])
    # vmap over the leading axis, and over a middle one (in_axes=1)
    np.testing.assert_allclose(np.asarray(fgrad.vmap(f)(fnp.asarray(batch))), loop, atol=1e-12)
    moved = fnp.asarray(np.moveaxis(batch, 0, 1))
    np.testing.assert_allclose(np.asarray(fgrad.vmap(f, in_axes=1)(moved)), loop, atol=1e-12)
    # jit equals eager
    np.testing.assert_allclose(np.asarray(fgrad.jit(f)(xs[0])), np.asarray(f(xs[0])), atol=1e-12)
    # grad of jit equals grad, and vmap of grad the per-example gradients
    loss = _loss(name, kwargs)
    want = np.asarray(fgrad.grad(loss)(xs[0]))
    np.testing.assert_allclose(np.asarray(fgrad.grad(fgrad.jit(loss))(xs[0])), want, atol=1e-12)
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(loss))(xs[0])), want, atol=1e-12)
    per_example = np.stack([np.asarray(fgrad.grad(loss)(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(fgrad.vmap(fgrad.grad(loss))(fnp.asarray(batch))), per_example, atol=1e-12)
    # jvp of vmap equals the per-example jvps (f is linear: the tangent output is f(t))
    tangent = _sample(batch.shape, kind, seed=12)
    _, t_out = fgrad.jvp(fgrad.vmap(f), (fnp.asarray(batch),), (fnp.asarray(tangent),))
    want_t = np.stack([np.asarray(fgrad.jvp(f, (x,), (fnp.asarray(t),))[1]) for x, t in zip(xs, tangent)])
    np.testing.assert_allclose(np.asarray(t_out), want_t, atol=1e-12)
    np.testing.assert_allclose(want_t, np.stack([np.asarray(f(fnp.asarray(t))) for t in tangent]), atol=1e-12)


def test_the_functions_are_three_ops():
    """The 1-d, 2-d and n-d functions, norm, padding and cropping compose three ops."""
    x = fnp.asarray(_sample((4, 6), "real"))
    for name, op in [("fft", "fft"), ("ifftn", "fft"), ("rfft2", "rfft"), ("irfft", "irfft"), ("hfft", "irfft")]:
        names = [node.op.name for node in fgrad.make_graph(getattr(F, name))(x).nodes]
        assert names.count(op) == 1 and not {"fft", "rfft", "irfft"} & set(names) - {op}, (name, names)
    graph = fgrad.make_graph(lambda v: F.fft(v, n=9))(x)
    assert [node.op.name for node in graph.nodes] == ["pad", "fft"]


# ------------------------------------------------------------------------ bad input

BAD = [
    ("fft", (np.ones(4),), {"axis": 1}, ValueError, ["fft", "axis 1", "(4,)"]),
    ("ifft", (np.ones((2, 3)),), {"axis": -3}, ValueError, ["ifft", "axis -3", "(2, 3)"]),
    ("rfft", (np.ones(4),), {"n": 0}, ValueError, ["rfft", "n >= 1", "(4,)"]),
    ("irfft", (np.ones(1),), {}, ValueError, ["irfft", "0 data points", "n >= 1"]),
    ("hfft", (np.ones(3),), {"n": -2}, ValueError, ["hfft", "n >= 1"]),
    ("fft", (np.ones(4),), {"norm": "unitary"}, ValueError, ["fft", "norm", "'ortho'"]),
    ("fftn", (np.ones((2, 3)),), {"norm": 1}, TypeError, ["fftn", "norm"]),
    ("fftn", (np.ones((2, 3)),), {"axes": (0, 0)}, ValueError, ["fftn", "repeat", "(2, 3)"]),
    ("fftn", (np.ones((2, 3)),), {"axes": {0: 1}}, TypeError, ["fftn", "axes", "sequence"]),
    ("irfftn", (np.ones((2, 3)),), {"s": (2, 1.5), "axes": (0, 1)}, TypeError, ["irfftn", "s"]),
    ("rfft2", (np.ones((2, 3)),), {"axes": (-1, 1)}, ValueError, ["rfft2", "repeat"]),
    ("irfftn", (np.ones((2, 3)),), {"s": (4,), "axes": (0, 1)}, ValueError, ["irfftn", "different lengths"]),
    ("ifft2", (np.ones((2, 3)),), {"s": (2, 0)}, ValueError, ["ifft2", "s >= 1"]),
    ("rfft", (np.ones(4) + 1j,), {}, TypeError, ["rfft", "real", "fft"]),
    ("ihfft", (np.ones(4) + 1j,), {}, TypeError, ["ihfft", "real"]),
    ("rfftn", (np.ones(4),), {"axes": ()}, ValueError, ["rfftn", "at least one axis"]),
    ("fft", (np.ones(4),), {"n": 2.0}, TypeError, ["fft", "n must be an int"]),
    ("fft", (3.0,), {}, ValueError, ["fft", "0-d"]),
    ("fftshift", (np.ones(4),), {"axes": 2}, ValueError, ["fftshift", "axis 2"]),
    ("fftfreq", (0,), {}, ValueError, ["fftfreq", "n must be >= 1"]),
    ("rfftfreq", (4,), {"d": 0.0}, ValueError, ["rfftfreq", "d"]),
    ("fftfreq", (4.0,), {}, TypeError, ["fftfreq", "n must be an int"]),
]


@pytest.mark.parametrize("name,args,kwargs,error,words", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_raises_a_clear_error_eagerly_and_under_jit(name, args, kwargs, error, words):
    fn = getattr(F, name)
    with pytest.raises(error) as eager:
        fn(*args, **kwargs)
    for word in words:
        assert word in str(eager.value), f"{name}: {word!r} not in {eager.value}"
    if isinstance(args[0], np.ndarray):
        with pytest.raises(error) as jitted:
            fgrad.jit(lambda a: fn(a, *args[1:], **kwargs))(fnp.asarray(args[0]))
        assert str(jitted.value) == str(eager.value)


def test_the_ops_refuse_bad_params_with_their_name():
    from fgrad.ops import fft as ops

    x = fnp.ones((2, 3))
    with pytest.raises(ValueError, match="irfft: output length"):
        ops.irfft(x, axes=(1,), norm="backward", n=7)
    with pytest.raises(ValueError, match="fft: axes"):
        fgrad.jit(lambda v: ops.fft(v, axes=(2,), norm="ortho", inverse=False))(x)
    with pytest.raises(ValueError, match="fft: axes"):
        ops.fft(x, axes=(1, 1), norm="ortho", inverse=False)  # numpy's would transform twice
    with pytest.raises(ValueError, match="rfft.*norm"):
        ops.rfft(x, axes=(1,), norm="none")


def test_frequency_helpers_take_the_array_api_dtype():
    for fn, want in ((fnp.fft.fftfreq, np.fft.fftfreq(6, d=0.25)), (fnp.fft.rfftfreq, np.fft.rfftfreq(6, d=0.25))):
        got = fn(6, d=0.25, dtype="float32")
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want.astype(np.float32))
        with pytest.raises(fgrad.errors.DTypeError, match="real floating"):
            fn(6, dtype="int32")
