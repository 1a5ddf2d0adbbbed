"""Atomic file writes for :mod:`fgrad.io`, and the removal of temporaries that crashes left.

A checkpoint is written (by the ``safetensors`` package) into a private directory next to
its target, moved to a temporary file, fsynced and renamed over the target, so readers see
the old file or the complete new one. The names say whose they are:
``.{target}.fgrad-{host}-{pid}-{random}.tmp`` for the file and the same with ``.dir`` for
the directory, where ``host`` is a short hash of the machine's name and ``pid`` the writing
process. (The library writes through a temporary of its own, named by it alone, so that one
is made inside fgrad's directory, where it is known whose it is.) A process killed while
writing (SIGKILL, out of memory, power loss) cannot remove its temporaries, which may be as
large as the checkpoint; the next write of the same target removes every such temporary of
this machine whose process no longer exists. Nothing else is ever removed: not other
targets' temporaries, not those of live processes, not those of other machines (a shared
file system), and on systems without POSIX process checks (Windows) nothing at all.

Example:
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> write_atomic(target, lambda tmp: open(tmp, "wb").write(b"data"))
    >>> open(target, "rb").read(), os.listdir(os.path.dirname(target))
    (b'data', ['ckpt.safetensors'])
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable

__all__ = ["write_atomic", "remove_stale_temporaries", "temporary_name"]


def _host_tag() -> str:
    """8 hex digits naming this machine, so that a pid is only judged where it was taken."""
    node = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    return hashlib.blake2b(node.encode("utf-8", "replace"), digest_size=4).hexdigest()


def temporary_name(target: str) -> str:
    """A fresh temporary file name, in ``target``'s directory, for a write of ``target``.

    Args:
        target: the file being written.

    Returns:
        The path ``{dir}/.{name}.fgrad-{host}-{pid}-{random}.tmp``.

    Example:
        >>> name = os.path.basename(temporary_name("/data/ckpt.safetensors"))
        >>> name.startswith(".ckpt.safetensors.fgrad-") and name.endswith(".tmp")
        True
    """
    directory, base = os.path.split(os.path.abspath(target))
    name = f".{base}.fgrad-{_host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    return os.path.join(directory, name)


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists here; True whenever that cannot be ruled out."""
    if pid == os.getpid():  # another thread of this process may be writing the same target
        return True
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def remove_stale_temporaries(target: str) -> list[str]:
    """Remove the temporaries of writes of ``target`` whose writing process has died.

    Only files named by :func:`temporary_name` for this exact target, and directories named
    as :func:`write_atomic` names them (with the plain files in them), made on this
    machine, by a process that no longer exists, are removed. Errors (a file already gone,
    no permission) leave the file where it is: cleaning up must never make a save fail.

    Args:
        target: the file about to be written.

    Returns:
        The paths removed.

    Example:
        >>> import os, subprocess, sys, tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
        ...                       capture_output=True, text=True).stdout.strip()
        >>> orphan = temporary_name(target).replace(f"-{os.getpid()}-", f"-{dead}-")
        >>> open(orphan, "wb").close()
        >>> remove_stale_temporaries(target) == [orphan] if os.name == "posix" else True
        True
    """
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return []
    directory, base = os.path.split(os.path.abspath(target))
    pattern = re.compile(
        re.escape(f".{base}.fgrad-{_host_tag()}-") + r"([1-9][0-9]{0,9})-[0-9a-f]{8}\.(tmp|dir)"
    )
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        try:
            if m.group(2) == "dir":
                if not entry.is_dir(follow_symlinks=False):
                    continue
                _remove_directory(entry.path)
            elif entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                continue
        except OSError:
            continue
        removed.append(entry.path)
    return removed


def _remove_directory(path: str) -> None:
    """Remove a working directory and the plain files in it (OSError if more is there)."""
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
    os.rmdir(path)


def write_atomic(target: str, write: Callable[[str], object]) -> None:
    """Write a file through ``write(tmp)`` into a fsynced temporary renamed over ``target``.

    Stale temporaries of ``target`` are removed first (:func:`remove_stale_temporaries`).
    ``write`` is given a path in a fresh private directory next to ``target``; it may
    write there directly or through temporaries of its own in that directory. The file is
    then moved to fgrad's temporary (made first, so that it has the permissions of an
    ordinary new file), fsynced and renamed over ``target``. If anything fails, the
    temporaries are removed and ``target`` is untouched.

    Args:
        target: the file to write; replaced if it exists.
        write: writes the contents to the file named by the path it is given.

    Raises:
        OSError: the directory is missing or not writable, the disk is full, ...; for a
            missing directory the message names ``target`` and the directory, not the
            temporary file. Whatever ``write`` raises propagates.

    Example:
        >>> import tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "x.bin")
        >>> write_atomic(target, lambda tmp: open(tmp, "wb").write(b"12"))
        >>> os.path.getsize(target)
        2
    """
    directory = os.path.dirname(os.path.abspath(target))
    remove_stale_temporaries(target)
    tmp = temporary_name(target)
    work = tmp[: -len(".tmp")] + ".dir"
    # 0o666 and O_EXCL: the umask applies as for an ordinary file, and no existing file is
    # ever reused as the temporary.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        os.close(os.open(tmp, flags, 0o666))
    except OSError as e:  # name the path asked for, not the hidden temporary file
        if not os.path.isdir(directory):
            reason = f"its directory {directory!r} does not exist (create it first)"
        else:
            reason = e.strerror or str(e)
        raise type(e)(e.errno, f"fgrad.io.save: cannot write {target!r}: {reason}") from None
    try:
        os.mkdir(work, 0o700)
        try:
            data = os.path.join(work, "data")
            write(data)
            # Libraries create files 0o600; the checkpoint keeps the temporary's mode.
            os.chmod(data, stat.S_IMODE(os.stat(tmp).st_mode))
            os.replace(data, tmp)
        finally:
            try:
                _remove_directory(work)
            except FileNotFoundError:
                pass
        fd = os.open(tmp, os.O_RDWR | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if os.name == "posix":  # make the rename itself durable
        try:
            dir_fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:  # some file systems cannot fsync a directory; the data are synced
            pass
        finally:
            os.close(dir_fd)
