"""fgrad.io on the safetensors package: library errors, shrinking files, temporaries, laziness."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad import _io_files
from fgrad import io as fio

safetensors = pytest.importorskip("safetensors")
safetensors_numpy = pytest.importorskip("safetensors.numpy")


def _raw_file(path, header: bytes, payload: bytes = b""):
    path.write_bytes(len(header).to_bytes(8, "little") + header + payload)
    return path


def test_header_the_library_refuses_is_a_value_error_naming_the_file(tmp_path):
    # Valid JSON for Python (a lone surrogate escape), not for the library's parser.
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
    header += b'"\\ud800":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}'
    path = _raw_file(tmp_path / "odd.safetensors", header, b"\0" * 4)
    with pytest.raises(ValueError, match="not a safetensors file the library accepts") as info:
        fio.load(path)
    assert str(path) in str(info.value)


def test_file_that_shrinks_while_it_is_read_is_a_value_error_not_a_crash(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"a": fnp.ones(1000), "b": fnp.zeros(1000)})
    real = safetensors.safe_open

    def open_then_truncate(*args, **kwargs):
        handle = real(*args, **kwargs)
        os.truncate(path, 200)  # after the header was checked and parsed: mmap would SIGBUS
        return handle

    monkeypatch.setattr(safetensors, "safe_open", open_then_truncate)
    with pytest.raises(ValueError, match="could not be read .*truncated or changed") as info:
        fio.load(path)
    assert str(path) in str(info.value) and "tensor '/" in str(info.value)


def test_header_changed_between_the_checks_and_the_library_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"a": fnp.ones(3)})
    other = tmp_path / "other.safetensors"
    fio.save(other, {"b": fnp.ones(3)})
    real = safetensors.safe_open
    monkeypatch.setattr(safetensors, "safe_open", lambda p, **kw: real(str(other), **kw))
    with pytest.raises(ValueError, match="changed while it was loaded"):
        fio.load(path)


def test_library_write_errors_are_os_errors_and_leave_nothing(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise safetensors.SafetensorError("Error while serializing: I/O error: disk full")

    monkeypatch.setattr(safetensors_numpy, "save_file", failing)
    with pytest.raises(OSError, match="cannot write .*disk full"):
        fio.save(tmp_path / "x.safetensors", {"w": fnp.ones(2)})
    assert os.listdir(tmp_path) == []


def test_header_over_the_limit_is_refused_on_save(tmp_path, monkeypatch):
    monkeypatch.setattr(fio, "_MAX_HEADER", 100)
    with pytest.raises(ValueError, match="over the format's limit of 100"):
        fio.save(tmp_path / "x.safetensors", {"w": fnp.ones(2)})
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="modes and umask are POSIX")
def test_saved_file_has_the_mode_of_an_ordinary_new_file(tmp_path):
    old = os.umask(0o022)
    try:
        fio.save(tmp_path / "x.safetensors", {"w": fnp.ones(2)})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "x.safetensors").st_mode & 0o777 == 0o644  # not the library's 600


def test_big_endian_and_strided_leaves_are_written_in_order(tmp_path):
    params = {"be": np.arange(6, dtype=">i4").reshape(2, 3), "t": np.arange(6.0).reshape(2, 3).T}
    path = tmp_path / "x.safetensors"
    fio.save(path, params)
    loaded = fio.load(path)
    arrays = safetensors_numpy.load_file(str(path))
    for name in params:
        np.testing.assert_array_equal(np.asarray(loaded[name]), params[name])
        np.testing.assert_array_equal(arrays[f"/{name}"], params[name])


@pytest.mark.skipif(os.name != "posix", reason="the pid check needs POSIX")
def test_working_directory_of_a_killed_save_is_removed_with_the_librarys_temporary(tmp_path, dead_pid):
    target = str(tmp_path / "ckpt.safetensors")
    dead = dead_pid
    mine = os.path.basename(_io_files.temporary_name(target))
    host = mine.split("-")[1]
    stale = tmp_path / f".ckpt.safetensors.fgrad-{host}-{dead}-0123abcd.dir"
    stale.mkdir()
    (stale / ".tmpAbC123").write_bytes(b"x" * 1000)  # the library's own temporary
    live = tmp_path / f".ckpt.safetensors.fgrad-{host}-{os.getpid()}-0123abcd.dir"
    live.mkdir()
    fio.save(target, {"w": fnp.ones(1)})
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.safetensors", live.name])


def test_import_does_not_load_safetensors_and_a_missing_package_is_named():
    code = (
        "import sys, fgrad, fgrad.io\n"
        "assert 'safetensors' not in sys.modules\n"
        "sys.modules['safetensors'] = None\n"
        "try:\n"
        "    fgrad.io.save(sys.argv[1], {'w': fgrad.numpy.ones(1)})\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, os.devnull], capture_output=True, text=True, check=True
    ).stdout
    assert "safetensors package" in out and "fgrad[io]" in out
