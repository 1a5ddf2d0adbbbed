"""Regression tests for rough edges a new-user trial found (one short test per edge)."""

import pathlib
import re
import types

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Each creation function with a traced size, and the argument the message names.
CREATION = {
    "zeros": (lambda n: fnp.zeros((n, 2)), "shape"),
    "ones": (lambda n: fnp.ones(n), "shape"),
    "full": (lambda n: fnp.full(n, 1.0), "shape"),
    "empty": (lambda n: fnp.empty((2, n)), "shape"),
    "arange": (lambda n: fnp.arange(n), "a bound"),
    "linspace": (lambda n: fnp.linspace(0.0, 1.0, n), "num"),
    "eye": (lambda n: fnp.eye(3, n), "M"),
    "identity": (lambda n: fnp.identity(n), "n"),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_issue_5_jit_creation_with_traced_size_says_static_argnums(name):
    # fnp.ones(n) used to raise numpy's "expected a sequence of integers ... got
    # 'GraphTracer<i64[]>'", and fnp.arange(n) suggested fgrad.stop_gradient.
    f, what = CREATION[name]
    with pytest.raises(ConcretizationError) as info:
        fgrad.jit(f)(fnp.array(3))
    message = str(info.value)
    assert message.startswith(f"fnp.{name}: {what} is a traced value i64[]")
    assert "static_argnums" in message and "stop_gradient" not in message
    # The fix it suggests works.
    assert fgrad.jit(f, static_argnums=0)(3).shape == f(3).shape


def test_issue_5_asarray_of_jit_tracer_says_static_argnums():
    with pytest.raises(ConcretizationError, match="static_argnums") as info:
        fgrad.jit(lambda x: np.asarray(x))(fnp.array(2.0))
    assert "stop_gradient" not in str(info.value)
    # Under an eager transform the value exists: stop_gradient is the advice there.
    with pytest.raises(TypeError, match="stop_gradient"):
        fgrad.grad(lambda x: fnp.sum(x * np.asarray(x)))(fnp.array(2.0))


def test_issue_2_creation_takes_concrete_tensor_sizes_and_traced_fill_values():
    assert fnp.zeros(fnp.array([2, 1])).shape == (2, 1)
    np.testing.assert_array_equal(fnp.arange(fnp.array(3)), [0, 1, 2])
    assert fnp.eye(fnp.array(2)).shape == (2, 2)
    # A traced fill value is broadcast (as in JAX), so it keeps its derivative:
    # d/dx sum(full((3,), x)) = 3.
    assert float(fgrad.grad(lambda x: fnp.sum(fnp.full((3,), x)))(2.0)) == 3.0
    out = fgrad.jit(lambda x: fnp.full((2,), x, dtype="float32"))(fnp.array(3))
    assert out.dtype == np.float32 and out.tolist() == [3.0, 3.0]


def test_issue_2_linspace_with_traced_end_points_is_differentiable():
    # Concretising would silently drop the derivative in the end points; traced ends are
    # computed with ops instead (as in JAX): d/dx sum([0, x/2, x]) = 1.5.
    assert float(fgrad.grad(lambda x: fnp.sum(fnp.linspace(0.0, x, 3)))(2.0)) == 1.5
    got = fgrad.grad(lambda x: fnp.sum(x * fnp.linspace(0.0, 1.0, 3)))(2.0)
    assert float(got) == 1.5


def test_issue_5_jit_rejects_unknown_static_argnames():
    def f(x, mode="a"):
        return x

    with pytest.raises(ValueError, match=r"static_argnames \['mdoe'\].*\['x', 'mode'\]"):
        fgrad.jit(f, static_argnames="mdoe")
    fgrad.jit(f, static_argnames="mode")  # a real name is fine
    # A function taking **kwargs accepts any name.
    g = fgrad.jit(lambda x, **kwargs: x * kwargs["scale"], static_argnames="scale")
    assert float(g(fnp.array(2.0), scale=3.0)) == 6.0


def test_issue_3_save_into_missing_directory_names_the_requested_path(tmp_path):
    path = tmp_path / "missing" / "ckpt.safetensors"
    pytest.importorskip("safetensors")
    with pytest.raises(FileNotFoundError) as info:
        fgrad.io.save(path, {"w": fnp.ones(2)})
    message = str(info.value)
    assert repr(str(path)) in message
    assert f"directory {str(path.parent)!r} does not exist" in message
    assert ".tmp" not in message  # the hidden temporary file is not what the user asked for
    assert not path.parent.exists()


def test_issue_5_lax_shows_only_its_public_api():
    lax = fgrad.lax
    assert sorted(lax.__all__) == sorted(
        ["cond", "fori_loop", "scan", "switch", "while_loop"]  # control flow
        + ["all_gather", "axis_index", "pmax", "pmean", "pmin", "psum"]  # named-axis collectives
    )
    internals = {"cse", "dce", "simplify", "vjp", "jvp", "GraphTrace", "active_traces"}
    internals |= {"concrete_value", "control", "asarray", "ShapeDtype", "Tensor"}
    assert not internals & set(dir(lax))


def _star(module_name: str) -> set:
    namespace: dict = {}
    exec(f"from {module_name} import *", namespace)  # noqa: S102  (a star import, as users write it)
    return {k for k in namespace if k != "__builtins__"}


def test_issue_3_optim_star_import_gives_no_modules():
    names = _star("fgrad.optim")
    assert names == set(fgrad.optim.__all__)
    assert not {"np", "math", "fnp", "tree"} & names
    assert not any(isinstance(getattr(fgrad.optim, n), types.ModuleType) for n in names)


def test_issue_2_operator_helpers_are_private_but_operators_work():
    public = [n for n in dir(fnp) if not n.startswith("_")]
    assert not [n for n in public if "_or_bitwise_" in n]
    assert "_or_bitwise_" not in " ".join(_star("fgrad.numpy"))
    a, b = fnp.array([True, True, False]), fnp.array([True, False, False])
    assert (a & b).tolist() == [True, False, False]
    assert (a | b).tolist() == [True, True, False]
    assert (a ^ b).tolist() == [False, True, False]
    assert (fnp.array([6]) & 3).tolist() == [2]


def test_issue_5_benchmark_docs_stand_alone():
    # The issue numbers live outside the repository.
    for path in ("benchmarks/README.md", "benchmarks/run.py", "benchmarks/op_overhead.py"):
        text = (ROOT / path).read_text()
        assert not re.search(r"\bissues? \d", text), path


def test_issue_11_nothing_cites_documents_outside_the_repository():
    """The design and style guides the team reads are not part of the repository, so no
    file may send a reader to them."""
    outside = re.compile("(" + "|".join(["STYLE", "DESIGN"]) + r")\.md|\.\./shared")
    found = []
    for path in sorted(ROOT.rglob("*")):
        if ".git" in path.parts or path.suffix not in (".py", ".md", ".toml", ".txt", ""):
            continue
        if path.is_file() and outside.search(path.read_text(errors="ignore")):
            found.append(str(path.relative_to(ROOT)))
    assert not found, found


def test_issue_2_readme_first_look_runs_top_to_bottom():
    # The snippet used to rebind y to vjp/jvp outputs, breaking hessian(loss)(w, x, y).
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split("## A first look", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    rng = np.random.default_rng(0)
    namespace = {
        "w": fnp.asarray(rng.normal(size=3)),
        "x": fnp.asarray(rng.normal(size=(4, 3))),
        "y": fnp.asarray(rng.normal(size=4)),
        "v": fnp.asarray(rng.normal(size=(4, 3))),
        "print": lambda *args: None,
    }
    exec(snippet, namespace)  # noqa: S102  (the README's own code)
    assert namespace["h"].shape == (3, 3)
