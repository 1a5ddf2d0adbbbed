"""Every op on complex input: the same answer eagerly and under jit, or the same error.

An op with a complex path must compute the complex function (checked against numpy's
function of the same name where numpy has one); an op without one must raise, eagerly as
under jit (numpy's kernels often return something plausible and wrong instead: erf of a
complex array gave erf of its modulus).
"""

import numpy as np
import pytest

import fgrad
from fgrad.ops import REGISTRY
from fgrad.transforms.subgraph import SubGraph
from fgrad.test_util import op_args, op_cases


def _holds_graphs(params):
    # Ops holding traced sub-graphs (control flow, custom rules) are built for their
    # inputs' avals by the function that records them; the sample graphs are real-valued.
    return any(
        isinstance(v, SubGraph) or (isinstance(v, tuple) and any(isinstance(b, SubGraph) for b in v))
        for v in params.values()
    )


def _complex_cases():
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if op.check is None:
            continue
        shapes, params = op_cases(op, 1)[0]
        if not _holds_graphs(params):
            yield pytest.param(name, shapes, params, id=name)


def _complexify(args, seed):
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if isinstance(a, fgrad.Tensor) and a.dtype.kind == "f":
            imag = rng.uniform(-0.5, 0.5, a.shape)
            out.append(fgrad.asarray(np.asarray(a) + 1j * imag))
        else:
            out.append(a)
    return out


def _outcome(f, args):
    try:
        with np.errstate(all="ignore"):
            out = f(*args)
    except (TypeError, ValueError, NotImplementedError) as err:
        return type(err), str(err)
    return None, out


@pytest.mark.parametrize("name,shapes,params", list(_complex_cases()))
def test_complex_input_eager_equals_jit(name, shapes, params):
    op = REGISTRY[name]
    args = _complexify(op_args(op, shapes, params, "complex"), len(name))
    eager_err, eager = _outcome(lambda *a: op(*a, **params), args)
    jit_err, jitted = _outcome(fgrad.jit(lambda *a: op(*a, **params)), args)
    assert eager_err == jit_err, (
        f"{name}: eagerly {eager_err.__name__ if eager_err else 'a result'}, under jit "
        f"{jit_err.__name__ if jit_err else 'a result'}: {eager if eager_err else jitted}"
    )
    if eager_err is not None:
        assert name in eager, f"{name}'s error does not name it: {eager}"
        return
    outs = eager if op.multiple_results else (eager,)
    jouts = jitted if op.multiple_results else (jitted,)
    for o, j in zip(outs, jouts):
        np.testing.assert_allclose(np.asarray(j), np.asarray(o), rtol=1e-12, atol=1e-12)
    ref = getattr(np, name, None)
    if ref is not None and isinstance(ref, np.ufunc) and not params and not op.multiple_results:
        with np.errstate(all="ignore"):
            want = ref(*[np.asarray(a) for a in args])
        np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-12, atol=1e-12)
