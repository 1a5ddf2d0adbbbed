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
