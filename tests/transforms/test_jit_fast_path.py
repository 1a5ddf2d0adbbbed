"""jit's cached-call fast path walks namedtuples (layer params) and registered pytree nodes
(a KV cache) too, keyed by their type and static data; values are the general path's."""

import dataclasses
from typing import NamedTuple

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import tree


class Pair(NamedTuple):
    w: object
    b: object


@dataclasses.dataclass
class Box:
    value: object
    scale: float = 2.0


tree.register_dataclass(Box, meta_fields=("scale",))


class Opaque:  # a registered node whose static data hashes by identity
    def __init__(self, x, tag):
        self.x, self.tag = x, tag


tree.register(Opaque, lambda o: ((o.x,), o.tag), lambda tag, ch: Opaque(ch[0], tag))


def test_namedtuples_and_registered_nodes_take_the_fast_path():
    f = fgrad.jit(lambda p, box: p.w * box.value + p.b)
    p, box = Pair(fnp.ones(3), fnp.asarray(0.5)), Box(fnp.arange(3.0))
    want = np.ones(3) * np.arange(3.0) + 0.5
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(p, box)), want)
    assert len(f._fast) == 1 and f.cache_info().hits == 2
    # another static value is another entry, not a wrong hit
    g = fgrad.jit(lambda box: box.value * box.scale)
    assert float(g(Box(fnp.asarray(1.0), 2.0))) == 2.0
    assert float(g(Box(fnp.asarray(1.0), 3.0))) == 3.0
    assert g(Box(fnp.asarray(1.0, dtype="float32"), 2)).dtype == np.float32  # int 2 != 2.0
    assert len(g._fast) == 3


def test_static_data_keyed_by_identity_stays_on_the_general_path():
    tag = object()
    f = fgrad.jit(lambda o: o.x * 2)
    for _ in range(3):
        assert float(f(Opaque(fnp.asarray(1.5), tag))) == 3.0
    assert not f._fast  # no entry per object identity


class Tagged:  # a registered node handing out the same static tuple at every flatten
    def __init__(self, x, aux):
        self.x, self.aux = x, aux


tree.register(Tagged, lambda t: ((t.x,), t.aux), lambda aux, ch: Tagged(ch[0], aux))


def test_static_data_met_again_keys_as_before_and_equal_values_of_other_types_apart():
    # The walk remembers the key of a static tuple it has seen (by identity, holding it);
    # (1,) and (True,) are == but must trace apart, whether or not either was seen before.
    f = fgrad.jit(lambda t: t.x * (2.0 if type(t.aux[0]) is bool else 3.0))
    ones, trues = (1,), (True,)
    for _ in range(3):
        assert float(f(Tagged(fnp.asarray(1.0), ones))) == 3.0
        assert float(f(Tagged(fnp.asarray(1.0), trues))) == 2.0
        assert float(f(Tagged(fnp.asarray(1.0), (1,)))) == 3.0  # a new, equal tuple
    assert len(f._fast) == 2 and f.cache_info().hits >= 6
