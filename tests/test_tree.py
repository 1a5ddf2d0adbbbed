"""Pytrees: flatten/unflatten round trips, map, structure equality, registration."""

import collections
import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
from fgrad import tree

Point = collections.namedtuple("Point", ["x", "y"])


@tree.register_dataclass
@dataclasses.dataclass(frozen=True)
class Params:
    w: Any
    b: Any


@tree.register_dataclass(meta_fields=("name",))
@dataclasses.dataclass(frozen=True)
class Layer:
    weight: Any
    name: str


class Box:
    """A container registered by hand (not a dataclass)."""

    def __init__(self, items, tag):
        self.items, self.tag = items, tag

    def __eq__(self, other):
        return type(other) is Box and (self.items, self.tag) == (other.items, other.tag)

    def __repr__(self):
        return f"Box({self.items!r}, {self.tag!r})"


tree.register(Box, lambda b: (b.items, b.tag), lambda tag, items: Box(list(items), tag))

leaves_st = st.one_of(st.integers(-5, 5), st.floats(-1, 1), st.text(max_size=2))


def _containers(children):
    small = dict(max_size=3)
    return st.one_of(
        st.none(),
        st.lists(children, **small),
        st.lists(children, **small).map(tuple),
        st.dictionaries(st.text(max_size=2), children, **small),
        st.builds(Point, children, children),
        st.builds(Params, children, children),
        st.builds(Layer, children, st.sampled_from(["enc", "dec"])),
        st.builds(Box, st.lists(children, max_size=2), st.integers(0, 2)),
    )


trees = st.recursive(leaves_st | st.none(), _containers, max_leaves=12)


@given(trees)
def test_flatten_unflatten_round_trip(t):
    leaves, treedef = tree.flatten(t)
    assert treedef.num_leaves == len(leaves)
    assert tree.unflatten(treedef, leaves) == t
    assert tree.leaves(t) == leaves
    assert tree.structure(t) == treedef


@given(trees)
def test_map_applies_to_every_leaf_and_keeps_structure(t):
    leaves, treedef = tree.flatten(t)
    assert tree.map(lambda leaf: leaf, t) == t
    counted = tree.map(lambda leaf: 1, t)
    assert tree.structure(counted) == treedef
    assert sum(tree.leaves(counted)) == len(leaves)


@given(trees)
def test_map_over_two_trees_pairs_leaves(t):
    leaves = tree.leaves(t)
    other = tree.unflatten(tree.structure(t), list(range(len(leaves))))
    assert tree.leaves(tree.map(lambda a, b: b, t, other)) == list(range(len(leaves)))
    assert tree.map(lambda a, b: a, t, other) == t


@given(trees)
def test_structure_equality_and_hash_ignore_leaf_values(t):
    zeros = tree.map(lambda leaf: 0, t)
    a, b = tree.structure(t), tree.structure(zeros)
    assert a == b and hash(a) == hash(b)
    assert tree.structure([t]) != tree.structure((t,))  # list vs tuple
    assert tree.structure((t, None)) != tree.structure((t, 0))  # None is a node, 0 a leaf


@given(trees)
def test_unflatten_rejects_the_wrong_number_of_leaves(t):
    treedef = tree.structure(t)
    with pytest.raises(ValueError, match=f"takes {treedef.num_leaves} leaves"):
        tree.unflatten(treedef, [0] * (treedef.num_leaves + 1))


def test_dict_leaves_are_ordered_by_sorted_key():
    assert tree.leaves({"b": 1, "a": 2, "c": {"z": 3, "y": 4}}) == [2, 1, 4, 3]
    assert tree.structure({"a": 1, "b": 2}) != tree.structure({"a": 1, "c": 2})
    assert tree.structure({"a": 1, "b": 2}) == tree.structure({"b": 0, "a": 0})


def test_meta_fields_are_static_and_part_of_the_structure():
    assert tree.leaves(Layer(weight=3.0, name="enc")) == [3.0]
    assert tree.structure(Layer(1, "enc")) != tree.structure(Layer(1, "dec"))
    rebuilt = tree.unflatten(tree.structure(Layer(1, "enc")), [5])
    assert rebuilt == Layer(5, "enc")


def test_namedtuples_are_nodes_without_registration():
    p = Point(1, (2, 3))
    leaves, treedef = tree.flatten(p)
    assert leaves == [1, 2, 3]
    assert type(tree.unflatten(treedef, leaves)) is Point
    assert tree.structure(Point(1, 2)) != tree.structure((1, 2))


def test_tensors_and_arrays_are_leaves():
    x = fgrad.asarray([1.0, 2.0])
    a = np.ones(3)
    leaves = tree.leaves({"x": x, "a": a, "n": None})
    assert len(leaves) == 2 and leaves[0] is a and leaves[1] is x


def test_is_leaf_stops_descent():
    t = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves = tree.leaves(t, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    assert tree.map(
        lambda x: len(x) if isinstance(x, tuple) else x, t, is_leaf=lambda x: isinstance(x, tuple)
    ) == {"a": 2, "b": [3, 2]}


def test_map_with_different_structures_raises():
    with pytest.raises(ValueError, match="structures differ"):
        tree.map(lambda a, b: a + b, (1, 2), [1, 2])
    with pytest.raises(ValueError, match="structures differ"):
        tree.map(lambda a, b: a + b, {"a": 1}, {"b": 1})


def test_registering_twice_raises():
    with pytest.raises(ValueError, match="already"):
        tree.register(Box, lambda b: ((), None), lambda aux, ch: Box([], None))
    with pytest.raises(ValueError, match="already"):
        tree.register(tuple, lambda t: (t, None), lambda aux, ch: tuple(ch))


def test_register_dataclass_rejects_non_dataclasses():
    class NotData:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        tree.register_dataclass(NotData)


def test_treedef_repr_is_readable():
    assert repr(tree.structure((1, {"a": [2, None]}))) == "TreeDef(tuple(*, {'a': list(*, None)}))"


def test_transforms_accept_registered_containers():
    params = Params(w=fgrad.asarray([1.0, 2.0]), b=fgrad.asarray(0.5))
    g = fgrad.grad(lambda p: fgrad.numpy.sum(p.w * p.w) + p.b * 3.0)(params)
    assert type(g) is Params
    np.testing.assert_allclose(np.asarray(g.w), [2.0, 4.0])
    np.testing.assert_allclose(float(g.b), 3.0)


# ------------------------------------------------------------------------ key paths

# What jax.tree_util.keystr gives for each leaf of the same tree in JAX 0.10.2 (the same
# containers registered there: Params and Layer with register_dataclass, Box with
# register_pytree_node), in flatten order, plain and with simple=True, separator="/".
_JAX_PATHS = [
    ("['a'].x", "a/x", 3),
    ("['a'].y['k']", "a/y/k", 4),
    ("['box'][<flat index 0>]", "box/0", 8),
    ("['box'][<flat index 1>]", "box/1", 9),
    ("['l'].weight", "l/weight", 7),
    ("['p'].w", "p/w", 5),
    ("['p'].b[0]", "p/b/0", 6),
    ("['z'][0]", "z/0", 1),
    ("['z'][1][0]", "z/1/0", 2),
]


def _mixed_tree():
    return {
        "z": [1, (2, None)],
        "a": Point(3, {"k": 4}),
        "p": Params(w=5, b=[6]),
        "l": Layer(7, "enc"),
        "box": Box([8, 9], 0),
    }


def test_paths_are_what_jax_gives():
    pairs, treedef = tree.flatten_with_path(_mixed_tree())
    got = [(tree.keystr(p), tree.keystr(p, simple=True, separator="/"), x) for p, x in pairs]
    assert got == _JAX_PATHS
    assert treedef == tree.structure(_mixed_tree())
    assert tree.leaves_with_path(_mixed_tree()) == pairs
    first = pairs[0][0]
    assert first == (tree.DictKey("a"), tree.GetAttrKey("x"))
    assert (first[0].key, first[1].name) == ("a", "x")
    assert pairs[2][0][1] == tree.FlattenedIndexKey(0)
    assert pairs[-1][0][1:] == (tree.SequenceKey(1), tree.SequenceKey(0))


def _follow(t, path):
    for k in path:
        if isinstance(k, tree.DictKey):
            t = t[k.key]
        elif isinstance(k, tree.SequenceKey):
            t = t[k.idx]
        elif isinstance(k, tree.GetAttrKey):
            t = getattr(t, k.name)
        else:
            t = t.items[k.key]  # Box is the only node registered without keys here
    return t


@given(trees)
def test_each_path_indexes_its_leaf(t):
    pairs, _ = tree.flatten_with_path(t)
    assert [x for _, x in pairs] == tree.leaves(t)
    for path, leaf in pairs:
        assert _follow(t, path) == leaf


def test_a_leaf_tree_has_the_empty_path_and_is_leaf_stops():
    assert tree.flatten_with_path(5.0)[0] == [((), 5.0)]
    pairs, _ = tree.flatten_with_path({"a": (1, 2)}, is_leaf=lambda x: isinstance(x, tuple))
    assert pairs == [((tree.DictKey("a"),), (1, 2))]


def test_leaf_paths_render_the_keys():
    assert tree.leaf_paths(tree.structure(_mixed_tree()))[2] == ("['box']", "[0]")
    assert tree.leaf_paths(tree.structure(_mixed_tree()))[5] == ("['p']", ".w")


def test_map_with_path():
    out = tree.map_with_path(lambda p, x, y: f"{tree.keystr(p)}:{x + y}", {"b": [1], "a": 2},
                             {"b": [10], "a": 20})
    assert out == {"a": "['a']:22", "b": ["['b'][0]:11"]}
    with pytest.raises(ValueError, match="structures differ"):
        tree.map_with_path(lambda p, x, y: x, [1], [1, 2])


def test_keystr_rejects_non_paths():
    with pytest.raises(fgrad.DTypeError, match="tree.keystr: keys must be a tuple of key"):
        tree.keystr(["a"])


def test_transpose_swaps_levels_as_jax():
    # jax.tree.transpose(structure([0, 0]), structure((0, 0, 0)), ...) gives this.
    rows = [(1, 2, 3), (4, 5, 6)]
    outer, inner = tree.structure([0, 0]), tree.structure((0, 0, 0))
    assert tree.transpose(outer, inner, rows) == ([1, 4], [2, 5], [3, 6])
    assert tree.transpose(outer, None, rows) == ([1, 4], [2, 5], [3, 6])
    batch = [{"x": 1, "y": 2}, {"x": 3, "y": 4}]
    assert tree.transpose(outer, tree.structure({"x": 0, "y": 0}), batch) == {
        "x": [1, 3], "y": [2, 4]
    }
    # transposing twice gives the tree back
    assert tree.transpose(inner, outer, tree.transpose(outer, inner, rows)) == rows
    with pytest.raises(TypeError, match="expected the inner structure"):
        tree.transpose(outer, tree.structure((0, 0)), rows)
    with pytest.raises(TypeError, match="outer structure"):
        tree.transpose(tree.structure((0, 0)), inner, rows)


def test_reduce_and_all():
    assert tree.reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]}, 10) == 16
    assert tree.reduce(lambda a, b: a * b, [2, (3, 4)]) == 24
    with pytest.raises(TypeError, match="no leaves and no initializer"):
        tree.reduce(lambda a, b: a + b, [None])
    assert tree.reduce(lambda a, b: a + b, [], 7) == 7
    assert tree.all([1, (True, 2.0)]) and tree.all([]) and not tree.all({"a": 1, "b": 0})
    assert tree.all([np.array(True)]) and not tree.all([np.array(False), True])
