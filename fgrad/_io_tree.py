"""The JSON description of a checkpoint's pytree (for :mod:`fgrad.io`), without recursion.

A checkpoint stores its pytree's structure as JSON: a leaf is its tensor's name (a JSON
string), ``None`` is ``null``, and containers are ``{"dict": {key: child, ...}}``,
``{"list": [children]}`` and ``{"tuple": [children]}``. A NamedTuple (the layers' typed
params, the optimisers' states) is written as the dict of its fields, in field order: the
file names no class, so loading runs no code and needs no import, and its tensors have the
names a dict of the same keys gave them. Tensor names are the leaves' paths as JSON
pointers (RFC 6901: ``/layers/0/w``; ``~`` is written ``~0`` and ``/`` ``~1`` in a key), so
names are unique and say where each tensor sits; :func:`fill` puts tensors found by those
names into a template's structure.

Both directions walk the tree with an explicit stack, never by recursion, so the depth of
a pytree is limited only by memory and the header's size: a tree 100 000 levels deep saves
and loads like a flat one (Python's recursion limit is 1000 frames, and ``json`` recurses).

Example:
    >>> import numpy as np
    >>> text, leaves = encode({"w": [np.zeros(2), None]}, lambda where, node: None)
    >>> text
    '{"dict":{"w":{"list":["/w/0",null]}}}'
    >>> leaves
    [('/w/0', array([0., 0.]))]
    >>> decode(text, {"/w/0": "W"}.__getitem__)
    {'w': ['W', None]}
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["encode", "decode", "escape", "fill", "show"]


def _is_namedtuple(cls: type) -> bool:
    """A namedtuple class that is a pytree node (``fgrad.ShapeDtype`` marks itself a leaf)."""
    return (
        issubclass(cls, tuple)
        and hasattr(cls, "_fields")
        and not getattr(cls, "_pytree_leaf", False)
    )


def escape(key: str) -> str:
    """A dict key as one JSON-pointer token (RFC 6901): ``~`` -> ``~0``, ``/`` -> ``~1``.

    Args:
        key: the dict key.

    Returns:
        The token, which contains no ``/``; distinct keys give distinct tokens.

    Example:
        >>> escape("a/b~c")
        'a~1b~0c'
    """
    return key.replace("~", "~0").replace("/", "~1")


def show(where: str) -> str:
    """A tensor path for an error message: quoted, or ``the root`` for the empty path.

    Example:
        >>> show("/a/0"), show("")
        ("'/a/0'", 'the root')
    """
    return repr(where) if where else "the root"


# --------------------------------------------------------------------------- encode

_CLOSE = object()  # stack marker: write the closing text, leave the node's path token


def encode(
    params: Any, leaf: Callable[[str, Any], None]
) -> tuple[str, list[tuple[str, Any]]]:
    """The JSON description of ``params`` and its leaves, in tree order, with their names.

    Args:
        params: a pytree of dicts with ``str`` keys, lists, tuples, NamedTuples (written
            as dicts of their fields), ``None`` and leaves (``fgrad.Tensor`` or
            ``numpy.ndarray``).
        leaf: called as ``leaf(name, node)`` on each leaf before it is taken; it may raise
            to refuse the leaf (``fgrad.io.save`` checks the dtype there).

    Returns:
        ``(json_text, [(name, leaf), ...])``.

    Raises:
        TypeError: a node of another type (dataclass, Python scalar, a dict subclass) or a
            dict key that is not a ``str`` or not valid Unicode; the message
            names the node's path and says how to convert it.

    Example:
        >>> import numpy as np
        >>> encode((np.zeros(2), {"a/b": None}), lambda where, node: None)[0]
        '{"tuple":["/0",{"dict":{"a/b":null}}]}'
    """
    from fgrad.tensor import Tensor  # layer 4; imported here so this module stays light

    import numpy as np

    out: list[str] = []
    leaves: list[tuple[str, Any]] = []
    tokens: list[str] = []  # the path of the node being written, one token per level
    # Items: (node, text before it, its path token or None), or (_CLOSE, text, has_token).
    stack: list[tuple[Any, str, Any]] = [(params, "", None)]
    while stack:
        node, prefix, token = stack.pop()
        out.append(prefix)
        if node is _CLOSE:
            if token:
                tokens.pop()
            continue
        if token is not None:
            tokens.append(token)
        cls = type(node)
        if cls is dict or _is_namedtuple(cls):
            out.append('{"dict":{')
            stack.append((_CLOSE, "}}", token is not None))
            items = node.items() if cls is dict else zip(cls._fields, node)
            children = [
                (child, ("," if i else "") + _key_json(key, tokens) + ":", "/" + escape(key))
                for i, (key, child) in enumerate(items)
            ]
            stack.extend(reversed(children))
            continue  # the token stays until the _CLOSE item
        if cls is list or cls is tuple:
            out.append(f'{{"{cls.__name__}":[')
            stack.append((_CLOSE, "]}", token is not None))
            children = [(child, "," if i else "", f"/{i}") for i, child in enumerate(node)]
            stack.extend(reversed(children))
            continue
        if node is None:
            out.append("null")
        elif isinstance(node, (Tensor, np.ndarray)):
            name = "".join(tokens)
            leaf(name, node)
            leaves.append((name, node))
            out.append(json.dumps(name, ensure_ascii=False))
        else:
            raise TypeError(_unsupported(node, "".join(tokens)))
        if token is not None:
            tokens.pop()
    return "".join(out), leaves


def _key_json(key: Any, tokens: list[str]) -> str:
    if type(key) is not str:
        raise TypeError(
            f"fgrad.io.save: dict at {show(''.join(tokens))} has key {key!r} of type "
            f"{type(key).__name__}; checkpoint dicts need str keys"
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 header can hold it
        raise TypeError(
            f"fgrad.io.save: dict at {show(''.join(tokens))} has key {key!r}, which is not "
            "valid Unicode (a lone surrogate); the file's header must be UTF-8"
        ) from None
    return json.dumps(key, ensure_ascii=False)


def _unsupported(node: Any, where: str) -> str:
    import numpy as np

    hint = ""
    if dataclasses.is_dataclass(node):
        hint = (
            "; save its leaves (fgrad.tree.leaves(x)) and rebuild it after loading with "
            "fgrad.tree.unflatten(fgrad.tree.structure(x), leaves), or make it a NamedTuple"
        )
    elif isinstance(node, (bool, int, float, complex, np.generic)):
        hint = "; wrap Python and numpy scalars with fnp.array(x)"
    elif isinstance(node, dict):
        hint = "; convert it with dict(x) first"
    return (
        f"fgrad.io.save: unsupported pytree node {type(node).__qualname__} at {show(where)}; "
        f"checkpoints hold dicts with str keys, lists, tuples, NamedTuples, None and Tensor "
        f"leaves{hint}"
    )


# --------------------------------------------------------------------------- fill


def fill(like: Any, take: Callable[[str, Any], Any]) -> Any:
    """``like`` with each leaf replaced by ``take(name, leaf)``, ``name`` its tensor name.

    The names are those :func:`encode` gives (a NamedTuple's fields and a dict's keys are
    path tokens alike), so a checkpoint's tensors go where a template has leaves whatever
    containers the file recorded: dict params saved before the layers' params were typed
    fill their NamedTuples. The result has ``like``'s containers (NamedTuples rebuilt with
    their class); ``None`` stays ``None``.

    Args:
        like: a pytree of dicts with ``str`` keys, lists, tuples, NamedTuples, ``None`` and
            leaves (anything else that ``fgrad.tree`` treats as a leaf: Tensors, arrays,
            ``fgrad.ShapeDtype``).
        take: called once per leaf, in encode's order; what it returns is the new leaf.

    Returns:
        The pytree of ``like``'s structure with the leaves ``take`` gave.

    Raises:
        TypeError: ``like`` holds another pytree node (a registered dataclass) or a dict
            key that is not a ``str``; the message names the node's path.

    Example:
        >>> fill({"a": [1, None], "b": (2,)}, lambda name, leaf: name)
        {'a': ['/a/0', None], 'b': ('/b/0',)}
    """
    from fgrad import tree  # layer 1; imported here so this module stays light

    tokens: list[str] = []
    # Frames: [node, iterator over (token, child), rebuilt children, token or None].
    stack: list[list] = []
    node, token = like, None
    while True:
        cls = type(node)
        if cls is dict or cls is list or cls is tuple or _is_namedtuple(cls):
            if token is not None:
                tokens.append(token)
            if cls is dict:
                for key in node:
                    if type(key) is not str:
                        raise TypeError(
                            f"fgrad.io.load: like has a dict at {show(''.join(tokens))} with "
                            f"key {key!r} of type {type(key).__name__}; checkpoint dicts have "
                            "str keys"
                        )
                children = [("/" + escape(k), c) for k, c in node.items()]
            elif cls is list or cls is tuple:
                children = [(f"/{i}", c) for i, c in enumerate(node)]
            else:
                children = [("/" + escape(f), c) for f, c in zip(cls._fields, node)]
            stack.append([node, iter(children), [], token])
            value = _NONE_YET
        elif node is None:
            value = None
        else:
            treedef = tree.structure(node)
            if treedef.children() or treedef.num_leaves != 1:  # a registered node
                where = show("".join(tokens) + (token or ""))
                raise TypeError(
                    f"fgrad.io.load: like has a pytree node {cls.__qualname__} at {where}, "
                    "which checkpoints do not hold; use dicts, lists, tuples and NamedTuples"
                )
            value = take("".join(tokens) + (token or ""), node)
        # Hand finished values to their parents, closing the containers that are complete.
        while True:
            if value is not _NONE_YET:
                if not stack:
                    return value
                stack[-1][2].append(value)
            frame = stack[-1]
            item = next(frame[1], None)
            if item is not None:
                token, node = item
                break
            stack.pop()
            original, children = frame[0], frame[2]
            if frame[3] is not None:
                tokens.pop()
            kind = type(original)
            if kind is dict:
                value = dict(zip(original.keys(), children))
            elif kind is list:
                value = children
            elif kind is tuple:
                value = tuple(children)
            else:
                value = kind(*children)


_NONE_YET = object()  # fill's marker: a container was opened, no value to hand on yet


# --------------------------------------------------------------------------- decode


class TreeError(ValueError):
    """The description is not valid JSON or not a tree; ``fgrad.io`` adds the file's name."""


def decode(text: str, resolve: Callable[[str], Any]) -> Any:
    """Rebuild the pytree a description written by :func:`encode` describes.

    Args:
        text: the JSON description.
        resolve: ``resolve(name)`` gives the leaf for a tensor name; it may raise (a
            ``KeyError`` is reported as a missing tensor). Each name may occur only once.

    Returns:
        The pytree of dicts, lists, tuples, ``None`` and resolved leaves.

    Raises:
        TreeError: (a ValueError) the text is not JSON, a node is not one of the forms
            above, or a tensor name is missing or occurs twice; the message names the path.

    Example:
        >>> decode('{"tuple":[null,"/1"]}', {"/1": 5}.__getitem__)
        (None, 5)
        >>> decode('{"set":[]}', {}.__getitem__)
        Traceback (most recent call last):
        ...
        fgrad._io_tree.TreeError: unrecognised node "{'set': []}" at the root
    """
    try:
        structure = json.loads(text)
    except RecursionError:  # deeper than the C decoder's limit: parse with a stack instead
        structure = _loads_deep(text)
    except ValueError as e:
        raise TreeError(f"not valid JSON: {e}") from None

    used: set[str] = set()
    tokens: list[str] = []  # the path of the node being read, for error messages

    def where() -> str:  # joined only for a message: joining per node would be quadratic
        return show("".join(tokens))

    def open_node(node: Any) -> tuple[bool, Any]:
        """(True, value) for a leaf or None; (False, frame) for a container."""
        if node is None:
            return True, None
        if type(node) is str:
            if node in used:
                raise TreeError(f"the tree names tensor {node!r} twice (at {where()})")
            try:
                value = resolve(node)
            except KeyError:
                raise TreeError(
                    f"the tree names tensor {node!r} (at {where()}), which is missing"
                ) from None
            used.add(node)
            return True, value
        if type(node) is dict and len(node) == 1:
            ((kind, children),) = node.items()
            # A frame: [kind, iterator over (token, key, child), output, key being read].
            if kind == "dict" and type(children) is dict:
                items = [("/" + escape(k), k, c) for k, c in children.items()]
                return False, ["dict", iter(items), {}, None]
            if kind in ("list", "tuple") and type(children) is list:
                items = [(f"/{i}", None, c) for i, c in enumerate(children)]
                return False, [kind, iter(items), [], None]
        raise TreeError(f"unrecognised node {str(node)[:80]!r} at {where()}")

    done, value = open_node(structure)
    if done:
        return value
    stack = [value]
    while True:
        frame = stack[-1]
        item = next(frame[1], None)
        if item is None:  # the container is complete: hand it to its parent
            stack.pop()
            value = tuple(frame[2]) if frame[0] == "tuple" else frame[2]
            if not stack:
                return value
            tokens.pop()
            parent = stack[-1]
            if parent[0] == "dict":
                parent[2][parent[3]] = value
            else:
                parent[2].append(value)
            continue
        token, key, child = item
        tokens.append(token)
        frame[3] = key
        done, value = open_node(child)
        if not done:
            stack.append(value)  # its token stays on the path until it is complete
            continue
        tokens.pop()
        if frame[0] == "dict":
            frame[2][key] = value
        else:
            frame[2].append(value)


_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_SCALAR = re.compile(r"null|true|false|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _string(token: str) -> str:
    """A JSON string token's value; most names have no escapes to decode."""
    return token[1:-1] if "\\" not in token else json.loads(token)


def _loads_deep(text: str) -> Any:
    """``json.loads`` for JSON of any depth: the same values, built with an explicit stack.

    Only reached when ``json.loads`` hits the recursion limit, so speed matters less than
    that the work stays linear in the text's length.
    """
    n = len(text)
    stack: list[list] = []  # [container, pending dict key]

    def fail(i: int, what: str) -> TreeError:
        return TreeError(f"not valid JSON: {what} at character {i}")

    def key_at(i: int) -> tuple[str, int]:
        m = _STRING.match(text, i)
        if m is None:
            raise fail(i, "expected a string key")
        i = _WS.match(text, m.end()).end()
        if text[i : i + 1] != ":":
            raise fail(i, "expected ':'")
        return _string(m.group()), _WS.match(text, i + 1).end()

    i = _WS.match(text, 0).end()
    while True:
        c = text[i : i + 1]
        if c in ("{", "["):
            j = _WS.match(text, i + 1).end()
            if text[j : j + 1] == ("}" if c == "{" else "]"):
                value, i = ({} if c == "{" else []), j + 1
            elif c == "{":
                key, i = key_at(j)
                stack.append([{}, key])
                continue
            else:
                stack.append([[], None])
                i = j
                continue
        elif c == '"':
            m = _STRING.match(text, i)
            if m is None:
                raise fail(i, "invalid string")
            value, i = _string(m.group()), m.end()
        else:
            m = _SCALAR.match(text, i)
            if m is None:
                raise fail(i, "expected a value")
            value, i = json.loads(m.group()), m.end()
        # Attach the value to the open containers, closing those that end here.
        while True:
            if not stack:
                if _WS.match(text, i).end() != n:
                    raise fail(i, "extra data")
                return value
            frame = stack[-1]
            container = frame[0]
            if type(container) is dict:
                container[frame[1]] = value
            else:
                container.append(value)
            i = _WS.match(text, i).end()
            c = text[i : i + 1]
            if c == ",":
                i = _WS.match(text, i + 1).end()
                if type(container) is dict:
                    frame[1], i = key_at(i)
                break
            if c == ("}" if type(container) is dict else "]"):
                stack.pop()
                value, i = container, i + 1
                continue
            raise fail(i, "expected ',' or a closing bracket")
