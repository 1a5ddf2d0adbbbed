"""Each module imports only from its own layer or layers before it (docs/internals.md, "The map")."""

import ast
import pathlib

import fgrad

ROOT = pathlib.Path(fgrad.__file__).parent

# Layer order; a module may import from its own rank or lower.
RANKS = {
    "fgrad.errors": 0,
    "fgrad._config": 0,
    "fgrad._args": 0,
    "fgrad._keys": 0,
    "fgrad.tree": 1,
    "fgrad.backend": 2,
    "fgrad.dtypes": 3,
    "fgrad.tensor": 4,
    "fgrad.core": 5,
    "fgrad.ops": 6,
    "fgrad.transforms": 7,
    "fgrad.numpy": 8,
    "fgrad.lax": 8,
    "fgrad.debug": 8,
    "fgrad.flatten_util": 8,
    "fgrad.random": 9,
    "fgrad.scipy": 9,
    "fgrad.nn": 10,
    "fgrad.optim": 10,
    "fgrad.io": 10,
    "fgrad._io_tree": 10,
    "fgrad._io_files": 10,
    "fgrad.llm": 10,
    "fgrad.distributed": 10,
    "fgrad.test_util": 11,
}


def _rank(module: str) -> int | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        rank = RANKS.get(".".join(parts[:n]))
        if rank is not None:
            return rank
    return None


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            for alias in node.names:  # "from fgrad import tree" names a module
                yield f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_modules_import_only_earlier_layers():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        module = "fgrad." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = _rank(module)
        if own is None:  # fgrad/__init__.py re-exports everything
            continue
        for imported in _imports(path):
            rank = _rank(imported)
            if imported.startswith("fgrad") and rank is not None and rank > own:
                bad.append(f"{module} (layer {own}) imports {imported} (layer {rank})")
    assert not bad, "\n".join(bad)


def test_only_backend_names_cupy():
    offenders = [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        if "import cupy" in p.read_text() and p.name != "backend.py"
    ]
    assert not offenders, offenders


def test_every_module_has_a_layer():
    """A module missing from the table would escape the layering check."""
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        module = "fgrad." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module != "fgrad" and _rank(module) is None:
            missing.append(module)
    assert not missing, missing
