"""The vmap sweep: for every op with a batching rule, ``vmap(op)`` equals the stacked
per-example loop, with every input mapped and with only one input mapped (the others
shared by all examples). ``FGRAD_TEST_CASES`` caps the cases per op, as in
test_registry.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY
from fgrad.test_util import op_args, op_cases

MAX_CASES = int(os.environ.get("FGRAD_TEST_CASES", "4"))
N_EXAMPLES = 3

# Ops without a batching rule yet. vmap raises NotImplementedError naming them; this list
# only shrinks (test_batch_rules_only_missing_where_listed fails for a new op without one).
NO_BATCH_RULE_YET = frozenset(
    # control.py: every op has a rule
    []
    # conv.py: every op has a rule
    # indexing.py: every op has a rule
    # linalg.py: every op has a rule
    # nn.py: every op has a rule
    # random.py: every op has a rule
    # reduction.py: every op has a rule
    # shape.py: every op has a rule
    # sorting.py: every op has a rule
)

_CASES = [
    pytest.param(op, shapes, params, id=f"{op.name}-{k}")
    for op in sorted(REGISTRY.values(), key=lambda o: o.name)
    if op.batch is not None
    for k, (shapes, params) in enumerate(op_cases(op, MAX_CASES))
]


def _examples(op, shapes, params):
    """N_EXAMPLES samples of the op's inputs; Python scalars are shared (example 0's)."""
    samples = [op_args(op, shapes, params, f"vmap{k}") for k in range(N_EXAMPLES)]
    return [
        [s[i] if not isinstance(samples[0][i], (bool, int, float)) else samples[0][i] for s in samples]
        for i in range(len(samples[0]))
    ]


def _as_list(out, op):
    return list(out) if op.multiple_results else [out]


def _stack(values):
    return np.stack([np.asarray(v) for v in values])


def _check(got, want, op):
    for g, w in zip(_as_list(got, op), want):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{op.name}: shape {g.shape}, per-example loop {w.shape}"
        assert g.dtype == w.dtype, f"{op.name}: dtype {g.dtype}, per-example loop {w.dtype}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=op.name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=op.name)


@pytest.mark.parametrize("op, shapes, params", _CASES)
def test_vmap_equals_the_per_example_loop(op, shapes, params):
    per_input = _examples(op, shapes, params)
    mapped = [i for i, vals in enumerate(per_input) if not isinstance(vals[0], (bool, int, float))]
    if not mapped:
        pytest.skip("no array inputs")

    def f(*args):
        return op(*args, **params)

    # Every array input mapped.
    outs = [_as_list(f(*[vals[k] for vals in per_input]), op) for k in range(N_EXAMPLES)]
    want = [_stack([o[j] for o in outs]) for j in range(len(outs[0]))]
    in_axes = tuple(0 if i in mapped else None for i in range(len(per_input)))
    args = [fnp.stack(vals) if i in mapped else vals[0] for i, vals in enumerate(per_input)]
    _check(fgrad.vmap(f, in_axes=in_axes)(*args), want, op)

    # Only one input mapped (the last array input), the others shared.
    if len(mapped) > 1:
        one = mapped[-1]
        outs = [
            _as_list(f(*[vals[k] if i == one else vals[0] for i, vals in enumerate(per_input)]), op)
            for k in range(N_EXAMPLES)
        ]
        want = [_stack([o[j] for o in outs]) for j in range(len(outs[0]))]
        in_axes = tuple(0 if i == one else None for i in range(len(per_input)))
        args = [fnp.stack(vals) if i == one else vals[0] for i, vals in enumerate(per_input)]
        _check(fgrad.vmap(f, in_axes=in_axes)(*args), want, op)


def test_batch_rules_only_missing_where_listed():
    missing = {op.name for op in REGISTRY.values() if op.batch is None}
    assert missing <= NO_BATCH_RULE_YET, (
        f"ops without a batching rule (defop(batch=...)): {sorted(missing - NO_BATCH_RULE_YET)}"
    )
    stale = NO_BATCH_RULE_YET - missing
    assert not stale, f"these ops have batching rules now; drop them from the list: {sorted(stale)}"


def test_an_op_without_a_rule_says_so():
    if not NO_BATCH_RULE_YET:
        pytest.skip("every op has a rule")
    name = sorted(NO_BATCH_RULE_YET)[0]
    with pytest.raises(NotImplementedError, match=name):
        fgrad.vmap(lambda x: REGISTRY[name](x))(fnp.ones((2, 3)))
