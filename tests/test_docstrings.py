"""Every public function and class has a docstring with an example (run as a doctest)."""

import importlib
import inspect

import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import distributed, io, nn, optim, random, test_util, tree
from fgrad.numpy import linalg
from fgrad.scipy import linalg as scipy_linalg
from fgrad.scipy import special as scipy_special
from fgrad.scipy import stats as scipy_stats

MODULES = {
    "fgrad": fgrad,
    "fgrad.numpy": fnp,
    "fgrad.numpy.linalg": linalg,
    "fgrad.numpy.fft": fnp.fft,
    "fgrad.scipy.special": scipy_special,
    "fgrad.scipy.linalg": scipy_linalg,
    **{f"fgrad.scipy.stats.{d}": getattr(scipy_stats, d) for d in scipy_stats.__all__},
    "fgrad.nn": nn,
    "fgrad.distributed": distributed,
    **{
        f"fgrad.llm.{m}": importlib.import_module(f"fgrad.llm.{m}")
        for m in ("bert", "cache", "config", "generation", "gguf", "hf", "int8", "loading",
                  "lora", "model", "quantized", "quants", "sampling", "tokenizer")
    },
    "fgrad.optim": optim,
    "fgrad.random": random,
    "fgrad.io": io,
    "fgrad.tree": tree,
    "fgrad.test_util": test_util,
    **{name: importlib.import_module(name)
       for name in ("fgrad.debug", "fgrad.flatten_util", "fgrad.scipy.optimize")},
}
# Constants, dtypes, modules and exceptions are not functions to document this way.
SKIP_TYPES = (type(fgrad), int, float, str, bool)


def _public(module):
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in sorted(names):
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, SKIP_TYPES):
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        if getattr(obj, "__module__", "").startswith(("numpy", "typing", "collections")):
            continue  # dtype aliases re-exported from numpy; type aliases
        if callable(obj):
            yield name, obj


@pytest.mark.parametrize("modname", sorted(MODULES))
def test_public_callables_have_examples(modname):
    missing = []
    for name, obj in _public(MODULES[modname]):
        doc = inspect.getdoc(obj) or ""
        if inspect.isclass(obj):
            if not doc:  # classes: a docstring; their methods carry the examples
                missing.append(name)
        elif "Example" not in doc and ">>>" not in doc:
            missing.append(name)
    assert not missing, f"{modname}: no docstring example for {missing}"
