"""Pytrees: nested containers of leaves that every transform takes and returns.

A pytree is a leaf or a container node (tuple, list, dict, ``None``, namedtuple, or a type
registered with :func:`register` / :func:`register_dataclass`) whose children are pytrees.
``flatten`` returns the leaves in a fixed order plus a :class:`TreeDef` that ``unflatten``
uses to rebuild the same structure. Dict children are ordered by sorted key, as in JAX.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from fgrad import _args
from fgrad._keys import exact_key
from fgrad.errors import DTypeError

__all__ = [
    "TreeDef",
    "flatten",
    "unflatten",
    "map",
    "leaves",
    "structure",
    "register",
    "register_dataclass",
    "leaf_paths",
    "DictKey",
    "SequenceKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "keystr",
    "flatten_with_path",
    "leaves_with_path",
    "map_with_path",
    "transpose",
    "reduce",
    "all",
]


def __dir__() -> list[str]:
    return sorted(__all__)


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple[list[Any], Hashable]]
    unflatten: Callable[[Hashable, list[Any]], Any]
    # ``aux -> key entries of the children`` (None: FlattenedIndexKey by position).
    keys: Callable[[Hashable], list[Any]] | None = None


_REGISTRY: dict[type, _NodeType] = {}


def register(
    cls: type,
    flatten_fn: Callable[[Any], tuple[Any, Hashable]],
    unflatten_fn: Callable[[Hashable, Any], Any],
) -> None:
    """Register a container type as a pytree node.

    Args:
        cls: the container class.
        flatten_fn: ``obj -> (children, aux)``; ``children`` an iterable of subtrees,
            ``aux`` hashable static data.
        unflatten_fn: ``(aux, children) -> obj``.

    Raises:
        ValueError: ``cls`` is already registered.
        DTypeError: ``cls`` is not a class, or a function is not callable.

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> register(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
        >>> leaves(Pair(1, (2, 3)))
        [1, 2, 3]
    """
    if not isinstance(cls, type):
        raise DTypeError(f"tree.register: cls must be a class, got {_args.describe(cls)}")
    _args.function(flatten_fn, "tree.register", "flatten_fn")
    _args.function(unflatten_fn, "tree.register", "unflatten_fn")
    if cls in _REGISTRY:
        raise ValueError(f"tree.register: {cls.__qualname__} is already a registered pytree node")
    _REGISTRY[cls] = _NodeType(
        lambda obj: _as_list_aux(flatten_fn(obj)), lambda aux, ch: unflatten_fn(aux, ch)
    )


def _as_list_aux(pair: tuple[Any, Hashable]) -> tuple[list[Any], Hashable]:
    children, aux = pair
    return list(children), aux


def register_dataclass(cls: type | None = None, *, meta_fields: tuple[str, ...] = ()):
    """Register a dataclass as a pytree node; usable as a class decorator.

    Fields named in ``meta_fields`` are static (hashable, part of the treedef); every other
    field is a child.

    Args:
        cls: a dataclass type.
        meta_fields: names of static fields.

    Raises:
        TypeError: ``cls`` is not a dataclass, or ``meta_fields`` is not a sequence of
            field names.
        ValueError: a name in ``meta_fields`` is not a field of ``cls``, or ``cls`` is
            already registered.

    Example:
        >>> @register_dataclass
        ... @dataclasses.dataclass(frozen=True)
        ... class Params:
        ...     w: Any
        ...     b: Any
        >>> leaves(Params(w=1.0, b=2.0))
        [1.0, 2.0]
    """

    if isinstance(meta_fields, str) or not isinstance(meta_fields, (tuple, list)) or not builtins.all(
        isinstance(m, str) for m in meta_fields
    ):
        raise DTypeError(
            "register_dataclass: meta_fields must be a tuple of field names, got "
            f"{_args.describe(meta_fields)}"
        )

    def wrap(klass: type) -> type:
        if not isinstance(klass, type) or not dataclasses.is_dataclass(klass):
            what = klass.__qualname__ if isinstance(klass, type) else _args.describe(klass)
            raise TypeError(f"register_dataclass: {what} is not a dataclass")
        if klass in _REGISTRY:
            raise ValueError(
                f"register_dataclass: {klass.__qualname__} is already a registered pytree node"
            )
        names = [f.name for f in dataclasses.fields(klass)]
        unknown = [m for m in meta_fields if m not in names]
        if unknown:
            raise ValueError(
                f"register_dataclass: meta_fields {unknown} are not fields of "
                f"{klass.__qualname__} (its fields: {names})"
            )
        data = tuple(n for n in names if n not in meta_fields)
        meta = tuple(n for n in names if n in meta_fields)

        def flatten_fn(obj):
            return [getattr(obj, n) for n in data], tuple(getattr(obj, n) for n in meta)

        def unflatten_fn(aux, children):
            return klass(**dict(zip(data, children)), **dict(zip(meta, aux)))

        register(klass, flatten_fn, unflatten_fn)
        keys = [GetAttrKey(n) for n in data]
        _REGISTRY[klass] = _REGISTRY[klass]._replace(keys=lambda aux: keys)
        return klass

    return wrap if cls is None else wrap(cls)


def _flatten_dict(d: dict) -> tuple[list[Any], Hashable]:
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


register(tuple, lambda t: (t, None), lambda aux, ch: tuple(ch))
register(list, lambda t: (t, None), lambda aux, ch: list(ch))
register(dict, _flatten_dict, lambda keys, ch: dict(zip(keys, ch)))
register(type(None), lambda t: ((), None), lambda aux, ch: None)


def _node_type(obj: Any) -> _NodeType | None:
    cls = type(obj)
    node = _REGISTRY.get(cls)
    if (
        node is None
        and issubclass(cls, tuple)
        and hasattr(cls, "_fields")
        and not getattr(cls, "_pytree_leaf", False)
    ):
        # namedtuples are nodes without registration, as in JAX (except those that mark
        # themselves leaves: fgrad.ShapeDtype, like JAX's ShapeDtypeStruct).
        node = _NodeType(lambda t: (list(t), None), lambda aux, ch, c=cls: c(*ch))
    return node


class TreeDef:
    """The structure of a pytree: node types, static data and where the leaves go.

    Two treedefs are equal when their trees have the same structure. ``num_leaves`` gives
    how many leaves ``unflatten`` expects.
    """

    __slots__ = ("_cls", "_node", "_aux", "_children", "num_leaves", "_key_cache")

    def __init__(self, cls, node, aux, children):
        self._cls = cls
        self._node = node
        self._aux = aux
        self._children = children
        self.num_leaves = 1 if cls is None else sum(c.num_leaves for c in children)
        self._key_cache = None

    def _key(self):
        # Transforms compare treedefs on every call: build the nested key once. Static data
        # by exact_key: a node traced with (1,) must not match one holding (True,).
        if self._key_cache is None:
            aux = exact_key(self._aux)
            self._key_cache = (self._cls, aux, tuple(c._key() for c in self._children))
        return self._key_cache

    def __eq__(self, other):
        return isinstance(other, TreeDef) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"TreeDef({self._show()})"

    def children(self) -> list[TreeDef]:
        """The treedefs of the root node's children (empty for a leaf), as in JAX.

        Example:
            >>> structure((1, {"a": 2})).children()
            [TreeDef(*), TreeDef({'a': *})]
        """
        return list(self._children)

    def _show(self) -> str:
        if self._cls is None:
            return "*"
        inner = ", ".join(c._show() for c in self._children)
        if self._cls is dict:
            inner = ", ".join(f"{k!r}: {c._show()}" for k, c in zip(self._aux, self._children))
            return "{" + inner + "}"
        if self._cls is type(None):
            return "None"
        return f"{self._cls.__name__}({inner})"


_LEAF = TreeDef(None, None, None, ())


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """Flatten a pytree into its leaves and its treedef.

    Args:
        tree: any pytree.
        is_leaf: optional predicate; a subtree for which it returns True is one leaf.

    Returns:
        ``(leaves, treedef)``: leaves in depth-first order, dict keys sorted.

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> leaves_, treedef = flatten({"b": (1, 2), "a": [3]})
        >>> leaves_
        [3, 1, 2]
        >>> unflatten(treedef, [30, 10, 20])
        {'a': [30], 'b': (10, 20)}
    """
    _args.function(is_leaf, "tree.flatten", "is_leaf", none_ok=True)
    out: list[Any] = []
    return out, _flatten(tree, is_leaf, out)


def _flatten(tree, is_leaf, out) -> TreeDef:
    node = None if (is_leaf is not None and is_leaf(tree)) else _node_type(tree)
    if node is None:
        out.append(tree)
        return _LEAF
    children, aux = node.flatten(tree)
    return TreeDef(type(tree), node, aux, tuple(_flatten(c, is_leaf, out) for c in children))


def unflatten(treedef: TreeDef, leaves: Any) -> Any:
    """Build the pytree of structure ``treedef`` whose leaves are ``leaves`` in order.

    Raises:
        ValueError: the number of leaves differs from ``treedef.num_leaves``.
        DTypeError: ``treedef`` is not a TreeDef, or ``leaves`` is not a sequence.

    Example:
        >>> unflatten(structure((0, [0, 0])), [1, 2, 3])
        (1, [2, 3])
    """
    _treedef(treedef, "tree.unflatten")
    if isinstance(leaves, (str, bytes, dict)) or not hasattr(leaves, "__iter__"):
        raise DTypeError(
            f"tree.unflatten: leaves must be a sequence of leaves, got {_args.describe(leaves)}"
        )
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree.unflatten: treedef {treedef} takes {treedef.num_leaves} leaves, "
            f"got {len(leaves)}"
        )
    it = iter(leaves)
    return _unflatten(treedef, it)


def _treedef(treedef: Any, fn: str) -> None:
    if not isinstance(treedef, TreeDef):
        raise DTypeError(
            f"{fn}: treedef must be a TreeDef, got {_args.describe(treedef)}; for a pytree "
            "pass its structure: tree.structure(tree) (or the second result of "
            "tree.flatten(tree))"
        )


def _unflatten(treedef: TreeDef, it) -> Any:
    if treedef._cls is None:
        return next(it)
    children = [_unflatten(c, it) for c in treedef._children]
    return treedef._node.unflatten(treedef._aux, children)


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in flatten order.

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> leaves([1, (2, None), {"x": 3}])
        [1, 2, 3]
    """
    _args.function(is_leaf, "tree.leaves", "is_leaf", none_ok=True)
    return flatten(tree, is_leaf)[0]


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The treedef of ``tree``.

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> structure((1, {"a": 2}))
        TreeDef(tuple(*, {'a': *}))
    """
    _args.function(is_leaf, "tree.structure", "is_leaf", none_ok=True)
    return flatten(tree, is_leaf)[1]


def map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leaf-wise over one or more pytrees of the same structure.

    Args:
        f: called as ``f(leaf, *rest_leaves)``.
        tree: the pytree whose structure the result has.
        *rest: pytrees with the same structure as ``tree``.
        is_leaf: optional predicate marking subtrees as leaves.

    Raises:
        ValueError: a tree in ``rest`` has a different structure.
        DTypeError: ``f`` is not callable, or ``is_leaf`` neither None nor callable.

    Example:
        >>> map(lambda a, b: a + b, {"w": 1, "b": 2}, {"w": 10, "b": 20})
        {'b': 22, 'w': 11}
    """
    _args.function(f, "tree.map", "f")
    _args.function(is_leaf, "tree.map", "is_leaf", none_ok=True)
    leaves_, treedef = flatten(tree, is_leaf)
    others = _rest_leaves(rest, treedef, is_leaf, "tree.map")
    return unflatten(treedef, [f(*xs) for xs in zip(leaves_, *others)])


def _rest_leaves(rest: tuple, treedef: TreeDef, is_leaf: Any, fn: str) -> list[list]:
    """The leaves of each tree in ``rest``, which must all have structure ``treedef``."""
    others = []
    for r in rest:
        r_leaves, r_def = flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"{fn}: structures differ: {treedef} vs {r_def}")
        others.append(r_leaves)
    return others


# ------------------------------------------------------------------------ key paths
# Where a leaf sits, as JAX's key entries: one per level, from the root down.


@dataclasses.dataclass(frozen=True)
class DictKey:
    """A dict child's key entry: ``str`` gives ``['name']``, as indexing it reads."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A tuple or list child's key entry: ``str`` gives ``[i]``."""

    idx: int

    def __post_init__(self) -> None:
        _index(self.idx, "SequenceKey", "idx")

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A namedtuple field's or registered dataclass field's key entry: ``str`` gives
    ``.name``."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise DTypeError(f"GetAttrKey: name must be a str, got {_args.describe(self.name)}")

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key entry of a child of a node registered with :func:`register` (which gives
    no names): its position among the children, ``str`` ``[<flat index i>]`` as in JAX."""

    key: int

    def __post_init__(self) -> None:
        _index(self.key, "FlattenedIndexKey", "key")

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def _index(value: Any, cls: str, field: str) -> None:
    if type(value) is not int or not 0 <= value < 2**63:
        raise DTypeError(
            f"{cls}: {field} must be a non-negative Python int, got {_args.describe(value)}"
        )


_KEY_TYPES = (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey)


def _simple(key: Any) -> str:
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, GetAttrKey):
        return key.name
    return str(key.key)


def keystr(keys: tuple, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``"['a'].w[0]"``, or with ``simple`` the bare keys joined by
    ``separator`` (``"a/w/0"`` for ``separator="/"``), as ``jax.tree_util.keystr``.

    Args:
        keys: a tuple of key entries (``DictKey``, ``SequenceKey``, ``GetAttrKey``,
            ``FlattenedIndexKey``), as :func:`flatten_with_path` gives.
        simple: render each key bare (no brackets, quotes or dots).
        separator: put between keys.

    Raises:
        DTypeError: ``keys`` is not a tuple of key entries, ``simple`` not a bool or
            ``separator`` not a str.

    Example:
        >>> path = flatten_with_path({"a": [1.0, 2.0]})[0][1][0]
        >>> keystr(path), keystr(path, simple=True, separator="/")
        ("['a'][1]", 'a/1')
    """
    if not isinstance(keys, tuple) or not builtins.all(isinstance(k, _KEY_TYPES) for k in keys):
        raise DTypeError(
            f"tree.keystr: keys must be a tuple of key entries (DictKey, SequenceKey, "
            f"GetAttrKey, FlattenedIndexKey), got {_args.describe(keys)}; pass a path from "
            "tree.flatten_with_path"
        )
    if type(simple) is not bool:
        raise DTypeError(f"tree.keystr: simple must be True or False, got {_args.describe(simple)}")
    if not isinstance(separator, str):
        raise DTypeError(f"tree.keystr: separator must be a str, got {_args.describe(separator)}")
    return separator.join(_simple(k) if simple else str(k) for k in keys)


def _child_keys(treedef: TreeDef) -> list:
    """The key entries of the root node's children."""
    cls, n = treedef._cls, len(treedef._children)
    if cls is dict:
        return [DictKey(k) for k in treedef._aux]
    if cls is tuple or cls is list:
        return [SequenceKey(i) for i in range(n)]
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return [GetAttrKey(name) for name in cls._fields]
    if treedef._node.keys is not None:
        return list(treedef._node.keys(treedef._aux))
    return [FlattenedIndexKey(i) for i in range(n)]


def _key_paths(treedef: TreeDef, prefix: tuple, out: list) -> None:
    if treedef._cls is None:
        out.append(prefix)
        return
    for key, child in zip(_child_keys(treedef), treedef._children):
        _key_paths(child, prefix + (key,), out)


def flatten_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple, Any]], TreeDef]:
    """Flatten a pytree into ``(key path, leaf)`` pairs and its treedef.

    Paths are tuples of key entries from the root down, as ``jax.tree.flatten_with_path``
    gives: ``DictKey`` for a dict key, ``SequenceKey`` for a tuple or list position,
    ``GetAttrKey`` for a namedtuple or registered dataclass field, ``FlattenedIndexKey``
    for a child of another registered node. :func:`keystr` renders one.

    Args:
        tree: any pytree.
        is_leaf: optional predicate; a subtree for which it returns True is one leaf.

    Returns:
        ``(pairs, treedef)``: one ``(path, leaf)`` per leaf in flatten order (a tree that
        is one leaf has the path ``()``).

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> pairs, _ = flatten_with_path({"b": (1, 2), "a": 3})
        >>> [(keystr(p), leaf) for p, leaf in pairs]
        [("['a']", 3), ("['b'][0]", 1), ("['b'][1]", 2)]
    """
    _args.function(is_leaf, "tree.flatten_with_path", "is_leaf", none_ok=True)
    leaves_, treedef = flatten(tree, is_leaf)
    paths: list = []
    _key_paths(treedef, (), paths)
    return list(zip(paths, leaves_)), treedef


def leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The ``(key path, leaf)`` pairs of ``tree``, in flatten order (see
    :func:`flatten_with_path`).

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> [(keystr(p), x) for p, x in leaves_with_path([1, {"w": 2}])]
        [('[0]', 1), ("[1]['w']", 2)]
    """
    _args.function(is_leaf, "tree.leaves_with_path", "is_leaf", none_ok=True)
    return flatten_with_path(tree, is_leaf)[0]


def map_with_path(
    f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Apply ``f(path, leaf, *rest_leaves)`` leaf-wise, as ``jax.tree.map_with_path``.

    Args:
        f: called with each leaf's key path (a tuple of key entries), the leaf, and the
            leaves of ``rest`` at the same place.
        tree: the pytree whose structure the result has.
        *rest: pytrees with the same structure as ``tree``.
        is_leaf: optional predicate marking subtrees as leaves.

    Raises:
        ValueError: a tree in ``rest`` has a different structure.
        DTypeError: ``f`` is not callable, or ``is_leaf`` neither None nor callable.

    Example:
        >>> map_with_path(lambda p, x: f"{keystr(p)}={x}", {"w": 1, "b": (2,)})
        {'b': ("['b'][0]=2",), 'w': "['w']=1"}
    """
    _args.function(f, "tree.map_with_path", "f")
    _args.function(is_leaf, "tree.map_with_path", "is_leaf", none_ok=True)
    pairs, treedef = flatten_with_path(tree, is_leaf)
    others = _rest_leaves(rest, treedef, is_leaf, "tree.map_with_path")
    columns = zip(*others) if others else ((),) * len(pairs)
    return unflatten(treedef, [f(path, leaf, *xs) for (path, leaf), xs in zip(pairs, columns)])


def leaf_paths(treedef: TreeDef) -> list[tuple[str, ...]]:
    """Where each leaf of a tree with structure ``treedef`` sits, in flatten order.

    Each path is a tuple of keys rendered as Python would index them: ``"[0]"`` for a
    sequence position or a child of a node registered with :func:`register`, ``"['w']"``
    for a dict key, ``".name"`` for a namedtuple or registered dataclass field. Used by
    error messages that name a leaf (:func:`flatten_with_path` gives the key entries).

    Args:
        treedef: the structure, from :func:`flatten` or :func:`structure`.

    Returns:
        One tuple of key strings per leaf (empty for a tree that is a single leaf).

    Raises:
        DTypeError: ``treedef`` is not a TreeDef (a pytree itself: pass
            ``tree.structure(tree)``).

    Example:
        >>> ["".join(p) for p in leaf_paths(structure(({"w": 1, "b": 2}, [3])))]
        ["[0]['b']", "[0]['w']", '[1][0]']
    """
    _treedef(treedef, "tree.leaf_paths")
    paths: list = []
    _key_paths(treedef, (), paths)
    return [
        tuple(f"[{k.key}]" if isinstance(k, FlattenedIndexKey) else str(k) for k in path)
        for path in paths
    ]


def _up_to(treedef: TreeDef, tree: Any, out: list, fn: str) -> None:
    """The subtrees of ``tree`` at the leaves of ``treedef`` (a prefix of its structure)."""
    if treedef._cls is None:
        out.append(tree)
        return
    node = _node_type(tree)
    if type(tree) is not treedef._cls or node is None:
        raise TypeError(f"{fn}: the tree does not have the outer structure {treedef}")
    children, aux = node.flatten(tree)
    if aux != treedef._aux or len(children) != len(treedef._children):
        raise TypeError(f"{fn}: the tree does not have the outer structure {treedef}")
    for c, sub in zip(children, treedef._children):
        _up_to(sub, c, out, fn)


def transpose(outer_treedef: TreeDef, inner_treedef: TreeDef | None, tree: Any) -> Any:
    """Swap the two levels of a tree of structure ``outer`` of ``inner``: a list of
    tuples becomes a tuple of lists, as ``jax.tree.transpose``.

    Args:
        outer_treedef: the structure of the outer level.
        inner_treedef: the structure each outer leaf's subtree has; None: that of the
            first one.
        tree: a pytree whose structure is ``outer_treedef`` with each leaf an
            ``inner_treedef`` subtree.

    Returns:
        A tree of structure ``inner_treedef`` whose leaves are ``outer_treedef`` trees.

    Raises:
        TypeError: ``tree``'s structure is not ``outer`` of ``inner``.
        DTypeError: a treedef is not a TreeDef.

    Example:
        >>> transpose(structure([0, 0]), structure((0, 0, 0)), [(1, 2, 3), (4, 5, 6)])
        ([1, 4], [2, 5], [3, 6])
    """
    _treedef(outer_treedef, "tree.transpose")
    if inner_treedef is not None:
        _treedef(inner_treedef, "tree.transpose")
    subtrees: list = []
    _up_to(outer_treedef, tree, subtrees, "tree.transpose")
    if inner_treedef is None:
        if not subtrees:
            raise ValueError("tree.transpose: inner_treedef=None needs an outer tree with a leaf")
        inner_treedef = structure(subtrees[0])
    columns: list[list] = [[] for _ in range(inner_treedef.num_leaves)]
    for sub in subtrees:
        sub_leaves, sub_def = flatten(sub)
        if sub_def != inner_treedef:
            raise TypeError(
                f"tree.transpose: a subtree has structure {sub_def}, expected the inner "
                f"structure {inner_treedef}"
            )
        for col, leaf in zip(columns, sub_leaves):
            col.append(leaf)
    return unflatten(inner_treedef, [unflatten(outer_treedef, col) for col in columns])


_NO_INITIAL = object()


def reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIAL,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Fold ``function`` over the leaves of ``tree`` in flatten order, as
    ``functools.reduce`` (and ``jax.tree.reduce``).

    Raises:
        TypeError: the tree has no leaves and no ``initializer`` is given.
        DTypeError: ``function`` is not callable, or ``is_leaf`` neither None nor callable.

    Example:
        >>> reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]}, 10)
        16
    """
    _args.function(function, "tree.reduce", "function")
    _args.function(is_leaf, "tree.reduce", "is_leaf", none_ok=True)
    leaves_ = flatten(tree, is_leaf)[0]
    if initializer is _NO_INITIAL:
        if not leaves_:
            raise TypeError("tree.reduce: the tree has no leaves and no initializer was given")
        return functools.reduce(function, leaves_)
    return functools.reduce(function, leaves_, initializer)


def all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:  # noqa: A001
    """Whether every leaf of ``tree`` is true (True for a tree without leaves), as
    ``jax.tree.all``.

    Raises:
        DTypeError: ``is_leaf`` is neither None nor callable.

    Example:
        >>> all([1, (True, 2.0)]), all({"a": 0})
        (True, False)
    """
    _args.function(is_leaf, "tree.all", "is_leaf", none_ok=True)
    return builtins.all(flatten(tree, is_leaf)[0])
