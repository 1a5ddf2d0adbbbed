"""Names that refer to ops refer to ops that exist (a misspelt one never matches)."""

import pathlib
import re

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY

ROOT = pathlib.Path(fgrad.__file__).parent
# Places where code names an op by a string: comparisons with an op's name, and registry
# look-ups.
PATTERNS = [
    re.compile(r'op\.name\s*[!=]=\s*"([a-z_0-9]+)"'),
    re.compile(r'REGISTRY\["([a-z_0-9]+)"\]'),
]
IN_TUPLE = re.compile(r"op\.name\s+(?:not\s+)?in\s+\(([^)]*)\)")


def test_every_op_name_in_the_source_is_an_op():
    unknown = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        names = [m.group(1) for p in PATTERNS for m in p.finditer(text)]
        for m in IN_TUPLE.finditer(text):
            names += re.findall(r'"([a-z_0-9]+)"', m.group(1))
        unknown += [f"{path.relative_to(ROOT)}: {n}" for n in names if n not in REGISTRY]
    assert not unknown, unknown


def test_fusion_tables_name_ops():
    from fgrad.transforms import fusion

    assert not [n for n in fusion._OPS if n not in REGISTRY]
    assert not [n for n in fusion._BOOL_OPERANDS if n not in REGISTRY]
    from fgrad.core import report

    assert not [n for n in report._REDUCING if n not in REGISTRY]


def test_issue_11_core_line_budget():
    """Tracing, graphs, staging and both modes of differentiation stay small enough to read
    in an afternoon (.ci/run prints the same count; the user API over the modes,
    transforms/autodiff.py, is not counted)."""
    files = ["core/trace.py", "core/graph.py", "core/staging.py", "transforms/ad.py"]
    assert sum(len((ROOT / f).read_text().splitlines()) for f in files) <= 1200


def test_issue_11_jit_reads_past_broadcasts_before_power_and_arctan2():
    """``power`` and ``arctan2`` broadcast as ``multiply`` does, so jit's graph reads the
    broadcast's input directly for each (a name table once said ``pow`` and ``atan2``)."""
    x, y = fnp.asarray(np.linspace(0.5, 2.0, 3)), fnp.ones((2, 3))
    for f in (fnp.multiply, fnp.power, fnp.arctan2):
        jitted = fgrad.jit(lambda x, y, f=f: f(fnp.broadcast_to(x, (2, 3)), y))
        names = [n.op.name for n in jitted.graph(x, y).nodes]
        assert "broadcast_to" not in names, (f, names)
        np.testing.assert_allclose(np.asarray(jitted(x, y)), np.asarray(f(x, y)), rtol=1e-15)
