"""``import fgrad`` stays cheap: heavy submodules load on first use and nothing is traced
at import (no timing is asserted; the import-time figure is in docs/internals.md)."""

import subprocess
import sys

import fgrad


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_issue_11_layers_optimisers_and_io_load_on_first_use():
    loaded = _run(
        "import sys, fgrad; print(sorted(m for m in sys.modules if m.split('.')[:2] in "
        "(['fgrad', 'nn'], ['fgrad', 'optim'], ['fgrad', 'io'], ['fgrad', 'random'])))"
    )
    assert loaded == "[]"
    assert _run("import fgrad; print(fgrad.nn.relu(fgrad.numpy.array([-1.0, 2.0])))") == "[0. 2.]"
    assert _run("from fgrad import optim; print(callable(optim.adam))") == "True"


def test_issue_11_nothing_is_traced_at_import():
    code = (
        "import fgrad\n"
        "from fgrad.lax import _ops as control\n"
        "from fgrad.transforms import _rule_ops\n"
        "print(control._scan_params.cache_info().currsize + control._branches.cache_info()"
        ".currsize + _rule_ops._vjp_call_params.cache_info().currsize)"
    )
    assert _run(code) == "0"


def test_lazy_names_are_listed():
    assert {"nn", "optim", "io", "random", "test_util"} <= set(dir(fgrad))


def test_import_does_not_load_optional_packages():
    """ml_dtypes alone takes about a second to import; scipy, sklearn and safetensors are
    optional extras."""
    loaded = _run(
        "import sys, fgrad, fgrad.numpy; print(sorted(m for m in ('ml_dtypes', 'scipy', "
        "'sklearn', 'safetensors', 'matplotlib') if m in sys.modules))"
    )
    assert loaded == "[]"
