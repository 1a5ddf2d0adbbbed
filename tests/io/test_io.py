"""fgrad.io: safetensors checkpoints round-trip pytrees and reject bad files clearly."""

import ast
import dataclasses
import json
import os
import pathlib
import pickle

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import backend
from fgrad import io as fio

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def _tree():
    rng = np.random.default_rng(0)
    return {
        "layers": [
            {"w": fnp.array(rng.standard_normal((2, 3)), "float32"), "b": fnp.zeros(3)},
            {"w": fnp.array(rng.standard_normal((3, 1)), "float16"), "b": None},
        ],
        "misc": (
            fnp.array([1, -2, 3], "int32"),
            None,
            [fnp.array([True, False]), fnp.array(np.arange(4, dtype=np.uint8))],
            (),
        ),
        "step": fnp.array(7),
        "empty": [],
        "nothing": {},
        "zero_size": fnp.zeros((0, 4), "float64"),
        "complex": fnp.array([1 + 2j], "complex64"),
        "weird/key~.name": fnp.array([1.0]),
        "": fnp.array([2.0]),
        "numpy_leaf": np.arange(6, dtype=np.int64).reshape(2, 3).T,  # not C-contiguous
    }


def _assert_same(a, b):
    assert type(a) is type(b) or (isinstance(a, np.ndarray) and isinstance(b, fgrad.Tensor))
    if isinstance(a, dict):
        assert list(a) == list(b)  # keys and their order
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif a is None:
        assert b is None
    else:
        assert isinstance(b, fgrad.Tensor)
        x, y = np.asarray(a), np.asarray(b)
        assert (x.dtype, x.shape) == (y.dtype, y.shape)
        np.testing.assert_array_equal(x, y)


def test_round_trip_nested_tree_with_many_dtypes(tmp_path):
    params = _tree()
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, params)  # a pathlib.Path works as well as a str
    _assert_same(params, fio.load(str(path)))


@pytest.mark.parametrize("tree_", [fnp.array([[1.0, 2.0]]), {}, None, [], (fnp.array(1),)])
def test_round_trip_trivial_trees(tmp_path, tree_):
    path = tmp_path / "t.safetensors"
    fio.save(path, tree_)
    _assert_same(tree_, fio.load(path))


def test_file_is_plain_safetensors_with_tree_in_metadata(tmp_path):
    path = tmp_path / "p.safetensors"
    fio.save(path, {"layers": [{"w": fnp.ones((2, 2), "float32")}]})
    arrays = safetensors_numpy.load_file(str(path))  # readable by the library on its own
    assert list(arrays) == ["/layers/0/w"] and arrays["/layers/0/w"].dtype == np.float32
    data = path.read_bytes()
    header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
    tree_ = json.loads(header["__metadata__"]["fgrad.tree"])
    assert tree_ == {"dict": {"layers": {"list": [{"dict": {"w": "/layers/0/w"}}]}}}


def test_foreign_safetensors_file_loads_as_flat_dict(tmp_path):
    path = tmp_path / "hf.safetensors"
    safetensors_numpy.save_file({"b.weight": np.ones(2), "a.bias": np.zeros(1, np.float32)}, path)
    loaded = fio.load(path)
    assert list(loaded) == ["a.bias", "b.weight"]
    assert loaded["a.bias"].dtype == np.float32


def test_load_on_a_device(tmp_path):
    path = tmp_path / "d.safetensors"
    fio.save(path, [fnp.array([1.0])])
    (x,) = fio.load(path, device="cpu")
    assert x.device == backend.CPU


# --------------------------------------------------------------------------- atomic write


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"w": fnp.ones(3)})
    fio.save(path, {"w": fnp.zeros(3)})  # overwrite in place
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    np.testing.assert_array_equal(np.asarray(fio.load(path)["w"]), np.zeros(3))


def test_failed_write_keeps_the_old_file_and_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"w": fnp.ones(3)})
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        fio.save(path, {"w": fnp.zeros(1000)})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_unsupported_leaf_leaves_no_file(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError):
        fio.save(path, {"a": fnp.ones(1), "b": object()})
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- save errors


class _Point(tuple):
    pass


@dataclasses.dataclass
class _Pair:
    a: object
    b: object


@pytest.mark.parametrize(
    "tree_, match",
    [
        ({"opt": _Pair(fnp.ones(1), None)}, r"_Pair at '/opt'.*make it a NamedTuple"),
        ({"lr": 0.1}, r"float at '/lr'.*fnp.array"),
        ({1: fnp.ones(1)}, r"key 1 of type int"),
        ([fnp.ones(1), {"p": _Point()}], r"_Point at '/1/p'"),
        ({"c": fnp.array([1j])}, r"'/c' has dtype complex128.*complex64"),
        ("text", r"str at the root"),
    ],
)
def test_save_rejects_unsupported_nodes_and_dtypes(tmp_path, tree_, match):
    with pytest.raises(TypeError, match=match):
        fio.save(tmp_path / "x.safetensors", tree_)


def test_save_rejects_float8(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match=r"'/w' has dtype float8_e4m3fn.*bfloat16 first"):
        fio.save(tmp_path / "x.safetensors", {"w": np.ones(2, dtype=ml_dtypes.float8_e4m3fn)})


# --------------------------------------------------------------------------- load errors


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    fio.save(path, {"w": fnp.ones((4, 4)), "b": [fnp.zeros(4, "float32")]})
    return path


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("cut", [1, 8, 100, 60])
def test_truncated_file_raises_value_error_naming_the_path(tmp_path, good_file, cut):
    data = good_file.read_bytes()
    path = _write(tmp_path, "cut.safetensors", data[: len(data) - cut])
    with pytest.raises(ValueError, match="truncated") as info:
        fio.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("keep", [0, 3, 8, 20])
def test_file_cut_inside_the_header(tmp_path, good_file, keep):
    path = _write(tmp_path, "short.safetensors", good_file.read_bytes()[:keep])
    with pytest.raises(ValueError, match="not a safetensors file|truncated") as info:
        fio.load(path)
    assert str(path) in str(info.value)


def test_corrupt_header_raises_value_error(tmp_path, good_file):
    data = bytearray(good_file.read_bytes())
    n = int.from_bytes(data[:8], "little")
    data[8 : 8 + n] = b"\xff" * n  # garbage of the same length
    path = _write(tmp_path, "garbage.safetensors", bytes(data))
    with pytest.raises(ValueError, match="not UTF-8 JSON") as info:
        fio.load(path)
    assert str(path) in str(info.value)


def _file_with_header(header: dict, payload: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + payload


@pytest.mark.parametrize(
    "header, payload, match",
    [
        ([1, 2], b"", "not a JSON object"),
        ({"w": {"dtype": "F32", "shape": [2]}}, b"", "lacks dtype"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "truncated"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "needs 12"),
        ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}}, b"\0" * 8, "malformed"),
        ({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 2, "F8"),
        ({"__metadata__": {"fgrad.tree": 3}}, b"", "__metadata__"),
        ({"__metadata__": {"fgrad.format": "1", "fgrad.tree": "{oops"}}, b"", "not valid JSON"),
        ({"__metadata__": {"fgrad.format": "1", "fgrad.tree": '"/missing"'}}, b"", "missing"),
        ({"__metadata__": {"fgrad.format": "1", "fgrad.tree": '{"set": []}'}}, b"", "unrecognised"),
    ],
)
def test_corrupt_headers_raise_value_error(tmp_path, header, payload, match):
    path = _write(tmp_path, "bad.safetensors", _file_with_header(header, payload))
    with pytest.raises(ValueError, match=match) as info:
        fio.load(path)
    assert str(path) in str(info.value)


def test_unreferenced_tensor_is_an_error(tmp_path):
    meta = {"fgrad.format": "1", "fgrad.tree": json.dumps({"list": ["/0"]})}
    path = tmp_path / "extra.safetensors"
    safetensors_numpy.save_file({"/0": np.ones(1), "/1": np.ones(1)}, path, metadata=meta)
    with pytest.raises(ValueError, match="not referenced"):
        fio.load(path)


def test_overlapping_data_is_an_error(tmp_path):
    header = {
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    }
    path = _write(tmp_path, "overlap.safetensors", _file_with_header(header, b"\0" * 8))
    with pytest.raises(ValueError, match="tensor 'b' .* overlaps tensor 'a'") as info:
        fio.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02",
        b"just some text, not a checkpoint\n" * 3,
        b"PK\x03\x04" + b"\x00" * 40,  # a zip (PyTorch's .pt) header
    ],
    ids=["empty", "png", "text", "zip"],
)
def test_wrong_file_type_raises_value_error(tmp_path, data):
    path = _write(tmp_path, "wrong.safetensors", data)
    with pytest.raises(ValueError) as info:
        fio.load(path)
    assert str(path) in str(info.value)


class _Payload:
    """Unpickling this would create the marker file: proof that load never unpickles."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_pickle_files_are_rejected_and_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    path = _write(tmp_path, "evil.safetensors", pickle.dumps({"w": _Payload(str(marker))}))
    with pytest.raises(ValueError):
        fio.load(path)
    assert not marker.exists()


def test_io_modules_do_not_use_pickle():
    package = pathlib.Path(fio.__file__).parent
    sources = [package / "io.py", *sorted(package.glob("_io_*.py"))]
    assert len(sources) >= 3
    for path in sources:
        source = path.read_text()
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
        assert not imported & {"pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve"}
        assert "allow_pickle" not in source


def test_saved_file_is_not_a_pickle(good_file):
    # The first byte is the low byte of the header length, not a pickle opcode.
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(good_file.read_bytes())


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        fio.load(tmp_path / "nope.safetensors")


def test_round_trip_from_and_to_each_backend(tmp_path, xp):
    device = "cpu" if xp is np else "cuda"
    params = {"w": fnp.array([[1.5, -2.0]], dtype="float32", device=device), "n": [None]}
    path = tmp_path / "dev.safetensors"
    fio.save(path, params)
    loaded = fio.load(path, device=device)
    assert loaded["w"].device == backend.get_device(device) and loaded["n"] == [None]
    np.testing.assert_array_equal(np.asarray(loaded["w"]), [[1.5, -2.0]])


def test_issue_12_save_into_a_directory_names_save():
    import tempfile

    import pytest

    d = tempfile.mkdtemp()
    with pytest.raises(IsADirectoryError, match="fgrad.io.save: .* is a directory"):
        fgrad.io.save(d, {"w": fgrad.numpy.ones(2)})
    assert os.listdir(d) == []  # no temporary left behind
