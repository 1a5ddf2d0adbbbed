"""fgrad.random: Threefry known answers, reproducibility, independence, distributions, errors.

Statistical checks use fixed keys, so they are deterministic (never flaky); each threshold
is several standard errors wide and says where its expected value comes from.
"""

import hashlib
import math
import subprocess
import sys

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops.random import threefry2x32
from fgrad.tensor import _wrap


def a(x):
    return np.asarray(x)


def keys_of(batch):
    """The rows of a split() result as separate keys (independent of Tensor indexing)."""
    return [_wrap(row.copy()) for row in np.asarray(batch)]


# --------------------------------------------------------------------------- Threefry


# Known answers of threefry2x32_20 from Random123's kat_vectors (Salmon et al., SC 2011):
# (key, counter) -> output.
THREEFRY_KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key_words, counter, expected", THREEFRY_KAT)
def test_threefry2x32_20_known_answers(key_words, counter, expected):
    u = [np.array([w], dtype=np.uint32) for w in (*key_words, *counter)]
    y0, y1 = threefry2x32(np, *u)
    assert (int(y0[0]), int(y1[0])) == expected


def test_threefry_vectorised_matches_one_at_a_time():
    k = [np.array([w], dtype=np.uint32) for w in (0x13198A2E, 0x03707344)]
    x0 = np.array([c[1][0] for c in THREEFRY_KAT], dtype=np.uint32)
    x1 = np.array([c[1][1] for c in THREEFRY_KAT], dtype=np.uint32)
    y0, y1 = threefry2x32(np, *k, x0, x1)
    for i in range(3):
        one = threefry2x32(np, *k, x0[i : i + 1], x1[i : i + 1])
        assert (int(one[0][0]), int(one[1][0])) == (int(y0[i]), int(y1[i]))


def test_bits_are_threefry_of_the_element_index():
    # key(0) is (0, 0), and element 0 of a 32-bit draw is word 0 of block (0, 0): the first
    # Random123 known answer.
    b = a(random.bits(random.key(0), (4,)))
    assert b[0] == 0x6B200159 and b[1] == 0x99BA4EFE
    b64 = a(random.bits(random.key(0), (2,), dtype=np.uint64))
    assert int(b64[0]) == (0x6B200159 << 32) | 0x99BA4EFE


# --------------------------------------------------------------------------- keys


def test_key_layout_follows_jax_raw_keys():
    # jax.random.PRNGKey(seed) is [seed >> 32, seed & 0xFFFFFFFF] as uint32.
    assert a(random.key(42)).tolist() == [0, 42]
    assert a(random.key(2**32 + 5)).tolist() == [1, 5]
    assert a(random.key(-1)).tolist() == [2**32 - 1, 2**32 - 1]
    k = random.key(np.int64(7))
    assert k.dtype == np.uint32 and k.shape == (2,)


@pytest.mark.parametrize("seed", [1.5, True, "3", None])
def test_key_rejects_non_integer_seeds(seed):
    with pytest.raises(TypeError, match="seed must be an integer"):
        random.key(seed)


def test_key_rejects_out_of_range_seeds():
    with pytest.raises(ValueError, match="outside"):
        random.key(2**64)


def test_split_shapes_and_distinct_keys():
    k = random.key(0)
    ks = random.split(k, 5)
    assert ks.shape == (5, 2) and ks.dtype == np.uint32
    rows = {tuple(r) for r in a(ks).tolist()}
    assert len(rows) == 5 and tuple(a(k).tolist()) not in rows
    assert random.split(k).shape == (2, 2)
    assert random.split(k, (2, 3)).shape == (2, 3, 2)
    assert random.split(k, 0).shape == (0, 2)
    # split(key, n)[i] does not depend on n (counter i), as with JAX's partitionable split.
    np.testing.assert_array_equal(a(random.split(k, 3)), a(random.split(k, 5))[:3])


def test_fold_in_differs_from_parent_split_and_other_data():
    k = random.key(3)
    folded = [tuple(a(random.fold_in(k, d)).tolist()) for d in range(50)]
    assert len(set(folded)) == 50
    assert tuple(a(k).tolist()) not in folded
    splits = {tuple(r) for r in a(random.split(k, 50)).tolist()}
    assert not splits & set(folded)
    # fold_in is deterministic, and negative data wraps modulo 2**32
    np.testing.assert_array_equal(a(random.fold_in(k, 5)), a(random.fold_in(k, 5)))
    np.testing.assert_array_equal(a(random.fold_in(k, -1)), a(random.fold_in(k, 2**32 - 1)))
    with pytest.raises(ValueError, match="outside"):
        random.fold_in(k, 2**32)
    with pytest.raises(TypeError, match="integer"):
        random.fold_in(k, 1.5)


def test_fold_in_gives_an_independent_stream():
    k = random.key(11)
    x = a(random.normal(k, (100_000,)))
    y = a(random.normal(random.fold_in(k, 0), (100_000,)))
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.02  # sd of r is 1/sqrt(n) = 0.003


def test_split_unpacks_by_iteration():
    if not hasattr(fgrad.Tensor, "__getitem__"):
        pytest.skip("Tensor indexing (fgrad.numpy._getitem) is not in yet")
    k1, k2 = random.split(random.key(0))
    np.testing.assert_array_equal(a(k1), a(random.split(random.key(0)))[0])
    assert random.normal(k2, (2,)).shape == (2,)


# --------------------------------------------------------------------------- reproducibility


def _fingerprint(seed):
    k = random.key(seed)
    parts = [
        random.normal(k, (1000,)),
        random.uniform(random.fold_in(k, 1), (7, 3), dtype="float32"),
        random.split(k, 4),
        random.randint(random.fold_in(k, 2), (50,), -5, 5),
        random.permutation(random.fold_in(k, 3), 20),
        random.truncated_normal(random.fold_in(k, 4), -0.5, 1.5, (100,)),
    ]
    return [a(p).tobytes().hex() for p in parts]


def test_same_key_same_numbers_across_calls():
    assert _fingerprint(1234) == _fingerprint(1234)
    assert _fingerprint(1234) != _fingerprint(1235)


# Digests (sha256 of the bytes, first 16 hex digits) of draws from key(2024), taken from the
# eager implementation before the samplers became registry ops: moving them (and running
# them under jit) must not change a bit. Samplers without transcendental functions only, so
# that the digests do not depend on the platform's libm.
PINNED = {
    "split": (lambda k: random.split(k, (2, 3)), "5a060eb1479ac24b"),
    "fold_in": (lambda k: random.fold_in(k, -3), "46b643e86cd5200d"),
    "bits": (lambda k: random.bits(k, (5,), np.uint16), "c5a802e34284d98d"),
    "bits64": (lambda k: random.bits(k, (3,), np.uint64), "162da07645c82cc6"),
    "uniform": (lambda k: random.uniform(k, (7,), "float32", -1.0, 2.0), "215cbdc63ba92ef2"),
    "bernoulli": (lambda k: random.bernoulli(k, np.array([0.2, 0.7]), (3, 2)), "7b9453f4b6c2ef93"),
    "randint": (lambda k: random.randint(k, (9,), -(2**62) - 1, 2**62 + 1), "bcaa6840dc0bdace"),
    "permutation": (
        lambda k: random.permutation(k, np.arange(12).reshape(3, 4), axis=1, independent=True),
        "5c0f99d81a93e3c8",
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_numbers(name):
    draw, digest = PINNED[name]
    assert hashlib.sha256(a(draw(random.key(2024))).tobytes()).hexdigest()[:16] == digest


def test_pinned_transcendental_samplers():
    # Same source as PINNED, compared to rounding (libm may differ in the last bit).
    k = random.key(2024)
    np.testing.assert_allclose(
        a(random.normal(k, (3,), np.complex128)),
        [
            -0.4317645757869435 - 0.3166888506003157j,
            -0.6849040675864398 - 0.01765195756153901j,
            -0.7925461301450988 - 0.311002048091587j,
        ],
        rtol=1e-13,
    )
    lo, hi = np.array([-1.0, 2.0, -np.inf]), np.array([0.5, np.inf, -3.0])
    np.testing.assert_allclose(
        a(random.truncated_normal(k, lo, hi, (2, 3))),
        [
            [-0.28659756501644007, 2.1843867903056045, -3.067267966004371],
            [-0.24583195913117817, 2.1788132459687257, -3.434094185976554],
        ],
        rtol=1e-13,
    )
    logits = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]])
    assert a(random.categorical(k, logits, axis=0)).tolist() == [1, 1]


def test_same_key_same_numbers_across_processes():
    code = (
        "import numpy as np; from fgrad import random; k = random.key(1234); "
        "print(np.asarray(random.normal(k, (1000,))).tobytes().hex()); "
        "print(np.asarray(random.split(k, 4)).tobytes().hex())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    fp = _fingerprint(1234)
    assert out == [fp[0], fp[2]]


def test_elements_depend_only_on_key_and_index():
    k = random.key(5)
    for sampler in (random.uniform, random.normal, random.bits):
        long = a(sampler(k, (10,)))
        np.testing.assert_array_equal(a(sampler(k, (4,))), long[:4])
        np.testing.assert_array_equal(a(sampler(k, (2, 5))).reshape(-1), long)
    f32 = a(random.uniform(k, (9,), dtype="float32"))
    np.testing.assert_array_equal(a(random.uniform(k, (4,), dtype="float32")), f32[:4])


def test_namespace_purity_with_array_api_strict():
    # The generator uses only Array API names, so a strict namespace gives the same bits.
    xps = pytest.importorskip("array_api_strict")
    k = _wrap(xps.asarray([0, 42], dtype=xps.uint32))

    def back(t):
        return np.from_dlpack(t._data)

    np.testing.assert_array_equal(back(random.bits(k, (5,))), a(random.bits(random.key(42), (5,))))
    np.testing.assert_array_equal(back(random.split(k, 3)), a(random.split(random.key(42), 3)))
    np.testing.assert_array_equal(
        back(random.uniform(k, (6,))), a(random.uniform(random.key(42), (6,)))
    )
    np.testing.assert_allclose(
        back(random.normal(k, (6,))), a(random.normal(random.key(42), (6,))), rtol=1e-15
    )


@pytest.mark.gpu
def test_same_numbers_on_numpy_and_cupy(xp):
    if xp is np:
        pytest.skip("compares cupy with numpy")
    kc = random.key(9, device="cuda")
    kn = random.key(9)
    for draw in (
        lambda k: random.bits(k, (1001,)),
        lambda k: random.bits(k, (33,), dtype=np.uint64),
        lambda k: random.split(k, 7),
        lambda k: random.fold_in(k, 3),
        lambda k: random.uniform(k, (1001,)),
        lambda k: random.uniform(k, (1001,), dtype="float32"),
        lambda k: random.randint(k, (100,), -3, 1000),
        lambda k: random.permutation(k, 100),
        lambda k: random.bernoulli(k, 0.3, (100,)),
        lambda k: random.categorical(k, np.log([0.2, 0.3, 0.5]), shape=(100,)),
    ):
        np.testing.assert_array_equal(a(draw(kc)), a(draw(kn)))
    # transcendental samplers agree to rounding (libm differences)
    np.testing.assert_allclose(
        a(random.normal(kc, (1000,))), a(random.normal(kn, (1000,))), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        a(random.truncated_normal(kc, -1.0, 3.0, (1000,))),
        a(random.truncated_normal(kn, -1.0, 3.0, (1000,))),
        rtol=1e-12,
        atol=1e-12,
    )


# --------------------------------------------------------------------------- independence


def test_split_streams_are_uncorrelated():
    k1, k2 = keys_of(random.split(random.key(0)))
    x = a(random.normal(k1, (100_000,)))
    y = a(random.normal(k2, (100_000,)))
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.02  # sd of r is 1/sqrt(n) = 0.003
    # neighbouring elements within one stream are uncorrelated too (lag 1 and 2)
    for lag in (1, 2):
        assert abs(np.corrcoef(x[:-lag], x[lag:])[0, 1]) < 0.02
    # 32-bit draws interleave the two words of each block: check them separately
    u = a(random.uniform(k1, (100_000,), dtype="float32"))
    assert abs(np.corrcoef(u[0::2], u[1::2])[0, 1]) < 0.02


def test_many_split_keys_give_distinct_first_draws():
    ks = keys_of(random.split(random.key(1), 200))
    first = {float(a(random.uniform(k))) for k in ks}
    assert len(first) == 200


def test_bits_are_fair():
    b = a(random.bits(random.key(2), (100_000,)))
    ones = np.stack([(b >> i) & 1 for i in range(32)]).mean(axis=1)
    # each bit is Bernoulli(1/2): sd of the mean is 0.5 / sqrt(n) = 0.0016
    assert np.all(np.abs(ones - 0.5) < 0.008)


def test_uniform_passes_chi_square_and_ks():
    n = 100_000
    u = a(random.uniform(random.key(7), (n,)))
    counts = np.bincount((u * 100).astype(int), minlength=100)
    chi2 = ((counts - n / 100) ** 2 / (n / 100)).sum()
    assert chi2 < 160  # 99 degrees of freedom: mean 99, sd 14; P(chi2 > 160) ~ 1e-4
    s = np.sort(u)
    i = np.arange(1, n + 1)
    d = max((i / n - s).max(), (s - (i - 1) / n).max())
    assert d * math.sqrt(n) < 1.95  # Kolmogorov distribution: P(> 1.95) = 0.001


# --------------------------------------------------------------------------- shapes, dtypes


@pytest.mark.parametrize(
    "draw, shape, dtype",
    [
        (lambda k: random.bits(k), (), np.uint32),
        (lambda k: random.bits(k, (2, 3), np.uint8), (2, 3), np.uint8),
        (lambda k: random.bits(k, 4, np.uint16), (4,), np.uint16),
        (lambda k: random.bits(k, (3,), np.uint64), (3,), np.uint64),
        (lambda k: random.uniform(k), (), np.float64),
        (lambda k: random.uniform(k, (2, 3), "float32"), (2, 3), np.float32),
        (lambda k: random.uniform(k, (5,), np.float16), (5,), np.float16),
        (lambda k: random.uniform(k, (0, 3)), (0, 3), np.float64),
        (lambda k: random.normal(k), (), np.float64),
        (lambda k: random.normal(k, (4, 1), fnp.float32), (4, 1), np.float32),
        (lambda k: random.normal(k, (3,), np.float16), (3,), np.float16),
        (lambda k: random.normal(k, (3,), np.complex64), (3,), np.complex64),
        (lambda k: random.normal(k, (3,), np.complex128), (3,), np.complex128),
        (lambda k: random.bernoulli(k), (), np.bool_),
        (lambda k: random.bernoulli(k, 0.3, (2, 2)), (2, 2), np.bool_),
        (lambda k: random.bernoulli(k, fnp.array([0.1, 0.9])), (2,), np.bool_),
        (lambda k: random.bernoulli(k, np.array([0.1, 0.9]), (3, 2)), (3, 2), np.bool_),
        (lambda k: random.categorical(k, np.zeros(4)), (), np.int64),
        (lambda k: random.categorical(k, np.zeros((2, 4))), (2,), np.int64),
        (lambda k: random.categorical(k, np.zeros((2, 4)), axis=0), (4,), np.int64),
        (lambda k: random.categorical(k, np.zeros((2, 4)), shape=(5, 2)), (5, 2), np.int64),
        (lambda k: random.randint(k, (), 0, 3), (), np.int64),
        (lambda k: random.randint(k, (2, 3), -4, 4, np.int32), (2, 3), np.int32),
        (lambda k: random.randint(k, 6, 0, 256, np.uint8), (6,), np.uint8),
        (lambda k: random.randint(k, (2, 3), 0, np.array([1, 2, 3])), (2, 3), np.int64),
        (lambda k: random.permutation(k, 7), (7,), np.int64),
        (lambda k: random.permutation(k, np.ones((3, 4), np.float32), axis=1), (3, 4), np.float32),
        (lambda k: random.truncated_normal(k, -1.0, 1.0), (), np.float64),
        (lambda k: random.truncated_normal(k, -1.0, 1.0, (3,), "float32"), (3,), np.float32),
        (lambda k: random.truncated_normal(k, np.zeros(3), 1.0), (3,), np.float64),
        (lambda k: random.truncated_normal(k, np.zeros((2, 1)), np.ones(3)), (2, 3), np.float64),
    ],
)
def test_shapes_and_dtypes(draw, shape, dtype):
    out = draw(random.key(0))
    assert isinstance(out, fgrad.Tensor) and type(out) is fgrad.Tensor
    assert out.shape == shape and out.dtype == np.dtype(dtype)


def test_float32_normal_and_uniform_use_float32_arithmetic_bits():
    u = a(random.uniform(random.key(0), (10_000,), dtype="float32"))
    assert np.all((u >= 0) & (u < 1))
    assert np.all(np.ldexp(u, 23) == np.round(np.ldexp(u, 23)))  # multiples of 2**-23
    u64 = a(random.uniform(random.key(0), (10_000,)))
    assert np.all(np.ldexp(u64, 52) == np.round(np.ldexp(u64, 52)))  # multiples of 2**-52
    assert len(np.unique(u64)) == 10_000


# --------------------------------------------------------------------------- distributions


N = 100_000
SE = 1 / math.sqrt(N)  # standard error of a mean of unit-variance samples


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_normal_moments(dtype):
    z = a(random.normal(random.key(21), (N,), dtype=dtype)).astype(np.float64)
    assert abs(z.mean()) < 5 * SE
    assert abs(z.var() - 1) < 5 * math.sqrt(2) * SE  # var of s^2 is 2 for N(0, 1)
    assert abs((z**3).mean()) < 5 * math.sqrt(15) * SE  # skewness 0; E z^6 = 15
    assert abs((z**4).mean() - 3) < 5 * math.sqrt(96) * SE  # kurtosis 3; var z^4 = 105 - 9
    # tail frequency: P(|Z| > 2) = 0.0455
    assert abs((np.abs(z) > 2).mean() - 0.0455) < 5 * math.sqrt(0.0455 * 0.9545 / N)
    assert np.isfinite(z).all()


def test_normal_cdf_matches_erf():
    z = np.sort(a(random.normal(random.key(22), (N,))))
    cdf = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    i = np.arange(1, N + 1)
    d = max((i / N - cdf).max(), (cdf - (i - 1) / N).max())
    assert d * math.sqrt(N) < 1.95  # KS at the 0.1% level


def test_complex_normal_has_unit_variance():
    z = a(random.normal(random.key(23), (N,), dtype=np.complex128))
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02
    assert abs(z.real.var() - 0.5) < 0.01 and abs(z.imag.var() - 0.5) < 0.01
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02


def test_uniform_bounds_and_moments():
    u = a(random.uniform(random.key(24), (N,), minval=-2.0, maxval=3.0))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 5 * (5 / math.sqrt(12)) * SE  # mean (a+b)/2, sd (b-a)/sqrt 12
    assert abs(u.var() - 25 / 12) < 0.05
    # array bounds broadcast against shape
    v = a(
        random.uniform(
            random.key(25),
            (1000, 3),
            minval=np.array([0.0, 10.0, 20.0]),
            maxval=np.array([1.0, 11.0, 30.0]),
        )
    )
    assert np.all(v >= [0, 10, 20]) and np.all(v < [1, 11, 30])


def test_uniform_stays_below_maxval_despite_rounding():
    # [1, 1 + 2 ulp): minval + (maxval - minval) * u rounds up to maxval for u near 1.
    hi = np.nextafter(np.nextafter(1.0, 2.0), 2.0)
    u = a(random.uniform(random.key(26), (10_000,), minval=1.0, maxval=hi))
    assert np.all((u >= 1.0) & (u < hi))


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.93, 1.0])
def test_bernoulli_frequency(p):
    x = a(random.bernoulli(random.key(27), p, (N,)))
    assert abs(x.mean() - p) < 5 * math.sqrt(p * (1 - p) / N) + 1e-12


def test_bernoulli_with_array_p():
    p = np.array([0.05, 0.5, 0.8])
    x = a(random.bernoulli(random.key(28), p, (N, 3)))
    assert np.all(np.abs(x.mean(axis=0) - p) < 5 * np.sqrt(p * (1 - p) / N))


def test_categorical_frequencies_match_softmax():
    logits = np.array([1.0, -0.5, 2.0, 0.0, -np.inf])
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    x = a(random.categorical(random.key(29), logits, shape=(N,)))
    freq = np.bincount(x, minlength=5) / N
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / N) + 1e-12)
    assert freq[4] == 0  # -inf logit: probability 0


def test_categorical_along_axis_and_batch():
    logits = np.log(np.array([[0.7, 0.1], [0.2, 0.9], [0.1, 0.0 + 1e-300]]))  # classes on axis 0
    x = a(random.categorical(random.key(30), logits, axis=0, shape=(N, 2)))
    f0 = np.bincount(x[:, 0], minlength=3) / N
    f1 = np.bincount(x[:, 1], minlength=3) / N
    assert np.allclose(f0, [0.7, 0.2, 0.1], atol=0.01) and np.allclose(f1, [0.1, 0.9, 0], atol=0.01)


def test_categorical_reads_traced_logits():
    # Under grad, logits are tracers; the integer sample has no derivative and is the same.
    k = random.key(31)
    seen = []

    def f(w):
        seen.append(a(random.categorical(k, w * fnp.array([0.0, 1.0, 2.0]), shape=(5,))))
        return fnp.sum(w * w)

    fgrad.grad(f)(1.0)
    np.testing.assert_array_equal(
        seen[0], a(random.categorical(k, np.array([0.0, 1.0, 2.0]), shape=(5,)))
    )


def test_randint_range_and_uniformity():
    x = a(random.randint(random.key(32), (N,), -3, 7))
    assert x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    chi2 = ((counts - N / 10) ** 2 / (N / 10)).sum()
    assert chi2 < 40  # 9 degrees of freedom: P(chi2 > 40) ~ 7e-6


def test_randint_edge_bounds():
    k = random.key(33)
    x = a(random.randint(k, (1000,), 0, 256, np.uint8))
    assert x.dtype == np.uint8 and x.min() < 10 and x.max() > 245
    i64 = np.iinfo(np.int64)
    y = a(random.randint(k, (1000,), i64.min, i64.max))
    assert y.min() < -(2**61) and y.max() > 2**61
    assert np.all(a(random.randint(k, (10,), 5, 6)) == 5)
    # large span, forcing rejection rounds: span = 2**63 + 2 rejects almost half the words
    z = a(random.randint(k, (10_000,), -(2**62) - 1, 2**62 + 1))
    assert z.min() >= -(2**62) - 1 and z.max() <= 2**62
    w = a(random.randint(k, (20_000,), i64.min, 2**62 + 2))  # span 2**63 + 2**62 + 2
    assert np.all(w < 2**62 + 2) and abs(np.mean(w < 0) - 2**63 / (2**63 + 2**62 + 2)) < 0.02


def test_randint_errors():
    k = random.key(0)
    with pytest.raises(ValueError, match="minval < maxval"):
        random.randint(k, (3,), 5, 5)
    with pytest.raises(ValueError, match="bounds must lie"):
        random.randint(k, (3,), 0, 257, np.uint8)
    with pytest.raises(DTypeError):
        random.randint(k, (3,), 0, 5, np.float32)
    with pytest.raises(DTypeError):
        random.randint(k, (3,), 0.5, 5)
    with pytest.raises(ShapeError):
        random.randint(k, (3,), 0, np.array([4, 5]))


def test_permutation_is_a_permutation():
    for n in (0, 1, 2, 10, 1000):
        p = a(random.permutation(random.key(n), n))
        assert sorted(p.tolist()) == list(range(n))
    x = np.arange(12).reshape(3, 4)
    y = a(random.permutation(random.key(1), x))  # rows shuffled as a whole
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.tolist()))
    z = a(random.permutation(random.key(1), x, axis=1))  # columns shuffled as a whole
    assert sorted(map(tuple, z.T.tolist())) == sorted(map(tuple, x.T.tolist()))
    w = a(
        random.permutation(random.key(1), np.tile(np.arange(50), (4, 1)), axis=1, independent=True)
    )
    assert all(sorted(r) == list(range(50)) for r in w.tolist())
    assert len({tuple(r) for r in w.tolist()}) == 4  # each row its own permutation
    t = random.permutation(random.key(1), fnp.array([1.0, 2.0, 3.0]))
    assert sorted(a(t).tolist()) == [1.0, 2.0, 3.0]


def test_permutation_is_uniform_over_small_permutations():
    # all 6 orders of 3 items equally likely; 60,000 draws via independent rows
    rows = a(
        random.permutation(
            random.key(34), np.tile(np.arange(3), (60_000, 1)), axis=1, independent=True
        )
    )
    codes = rows[:, 0] * 3 + rows[:, 1]
    counts = np.bincount(codes, minlength=9)[[1, 2, 3, 5, 6, 7]]
    chi2 = ((counts - 10_000) ** 2 / 10_000).sum()
    assert chi2 < 25  # 5 degrees of freedom: P(chi2 > 25) ~ 1e-4
    # element 0 of a shuffled arange(10) lands on each position equally often
    pos = [
        int(np.argmax(a(random.permutation(k, 10)) == 0))
        for k in keys_of(random.split(random.key(35), 2000))
    ]
    counts = np.bincount(pos, minlength=10)
    assert ((counts - 200) ** 2 / 200).sum() < 35  # 9 dof: P(> 35) ~ 6e-5


def _truncnorm_moments(lo, hi):
    """Mean and variance of N(0, 1) truncated to [lo, hi] (closed form, via math.erf)."""

    def pdf(x):
        return 0.0 if math.isinf(x) else math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def cdf(x):
        return 0.5 * math.erfc(-x / math.sqrt(2))

    def xpdf(x):
        return 0.0 if math.isinf(x) else x * pdf(x)

    z = (
        cdf(hi) - cdf(lo)
        if lo < 0
        else 0.5 * (math.erfc(lo / math.sqrt(2)) - math.erfc(hi / math.sqrt(2)))
    )
    mean = (pdf(lo) - pdf(hi)) / z
    var = 1 + (xpdf(lo) - xpdf(hi)) / z - mean**2
    return mean, var


@pytest.mark.parametrize(
    "lo, hi",
    [
        (-1.0, 1.0),  # narrow around 0: uniform proposal
        (-2.0, 3.0),  # wide around 0: normal proposal
        (-math.inf, math.inf),
        (0.5, 1.0),  # one-sided, narrow: uniform proposal
        (0.0, math.inf),  # exponential proposal
        (3.0, math.inf),
        (8.0, 9.0),
        (-math.inf, -4.0),  # mirrored
        (-3.0, -2.5),
    ],
)
def test_truncated_normal_moments(lo, hi):
    z = a(random.truncated_normal(random.key(36), lo, hi, (N,)))
    assert z.min() >= lo and z.max() <= hi
    mean, var = _truncnorm_moments(lo, hi)
    sd = math.sqrt(var)
    assert abs(z.mean() - mean) < 5 * sd * SE
    assert abs(z.var() - var) < 6 * var * math.sqrt(2) * SE + 1e-12


def test_truncated_normal_float32_stays_in_bounds():
    z = a(random.truncated_normal(random.key(37), 0.1, 0.1000001, (1000,), dtype="float32"))
    assert np.all((z >= np.float32(0.1)) & (z <= np.float32(0.1000001)))


def test_truncated_normal_cdf_matches_erf():
    lo, hi = -0.3, 2.2
    z = np.sort(a(random.truncated_normal(random.key(38), lo, hi, (N,))))

    def cdf(x):
        return 0.5 * math.erfc(-x / math.sqrt(2))

    f = (np.vectorize(cdf)(z) - cdf(lo)) / (cdf(hi) - cdf(lo))
    i = np.arange(1, N + 1)
    d = max((i / N - f).max(), (f - (i - 1) / N).max())
    assert d * math.sqrt(N) < 1.95


# --------------------------------------------------------------------------- errors


def test_traced_keys_raise_type_error():
    def f(x, k):
        return fnp.sum(x * random.normal(k, (2,)))

    with pytest.raises(TypeError, match="key is a traced value"):
        fgrad.grad(f, argnums=1)(fnp.ones(2), random.key(0).astype(np.float64))
    # the documented pattern: the key is a plain argument that is not differentiated
    out = fgrad.grad(f)(fnp.ones(2), random.key(0))
    np.testing.assert_array_equal(a(out), a(random.normal(random.key(0), (2,))))


def test_traced_continuous_parameters_raise_type_error():
    k = random.key(0)
    with pytest.raises(TypeError, match="reparameterise"):
        fgrad.grad(lambda m: fnp.sum(random.uniform(k, (2,), minval=m, maxval=m + 1.0)))(0.0)
    with pytest.raises(TypeError, match="no derivatives"):
        fgrad.grad(lambda lo: fnp.sum(random.truncated_normal(k, lo, 1.0, (2,))))(0.0)
    with pytest.raises(TypeError, match="differentiable"):
        fgrad.grad(lambda x: fnp.sum(random.permutation(k, x)))(fnp.ones(3))


def test_bad_keys():
    with pytest.raises(TypeError, match=r"random.key\(0\)"):
        random.normal(0, (2,))
    with pytest.raises(TypeError, match="uint32"):
        random.normal(fnp.array([0, 1]), (2,))
    with pytest.raises(ShapeError, match="unpack"):
        random.normal(random.split(random.key(0)), (2,))
    with pytest.raises(TypeError):
        random.split([0, 0])


def test_bad_dtypes_and_shapes():
    k = random.key(0)
    with pytest.raises(DTypeError, match="float16, float32, float64"):
        random.uniform(k, (2,), dtype=np.int32)
    with pytest.raises(DTypeError):
        random.normal(k, (2,), dtype=np.int64)
    with pytest.raises(DTypeError):
        random.bits(k, (2,), dtype=np.int32)
    with pytest.raises(ValueError, match="negative"):
        random.normal(k, (-1,))
    with pytest.raises(ShapeError, match="broadcast"):
        random.uniform(k, (3,), minval=np.zeros(2))
    with pytest.raises(ShapeError, match="shape=None"):
        random.bernoulli(k, np.full(4, 0.5), (3,))
    with pytest.raises(ValueError, match="minval < maxval"):
        random.uniform(k, (2,), minval=1.0, maxval=1.0)
    with pytest.raises(ValueError, match="finite"):
        random.uniform(k, (2,), maxval=math.inf)
    with pytest.raises(ValueError, match="lower < upper"):
        random.truncated_normal(k, 1.0, 0.0)
    with pytest.raises(ShapeError, match="no axis"):
        random.categorical(k, np.zeros(3), axis=1)
    with pytest.raises(ValueError, match="0 classes"):
        random.categorical(k, np.zeros((2, 0)))
    with pytest.raises(ValueError, match="at least one axis"):
        random.permutation(k, np.float64(1.5))


def test_shape_arguments_must_be_integers():
    k = random.key(0)
    with pytest.raises(TypeError, match="tuple of ints"):
        random.normal(k, (2.5,))
    with pytest.raises(TypeError, match="tuple of ints"):
        random.normal(k, "ab")
    assert random.normal(k, np.int64(3)).shape == (3,)
    with pytest.raises(ValueError, match="negative"):
        random.split(k, -1)


def test_randint_bounds_must_fit_int64():
    k = random.key(0)
    with pytest.raises(ValueError, match="int64"):
        random.randint(k, (3,), 0, 2**63)
    with pytest.raises(ValueError, match="int64"):
        random.randint(k, (3,), 0, np.array([2**63], dtype=np.uint64))


def test_bernoulli_and_randint_read_traced_parameters():
    k = random.key(40)
    seen = []

    def f(w):
        seen.append(a(random.bernoulli(k, w * 0.5, (8,))))
        seen.append(a(random.randint(k, (8,), 0, fgrad.asarray(10) * w.astype("int64"))))
        return w * w

    fgrad.grad(f)(1.0)
    np.testing.assert_array_equal(seen[0], a(random.bernoulli(k, 0.5, (8,))))
    np.testing.assert_array_equal(seen[1], a(random.randint(k, (8,), 0, 10)))
