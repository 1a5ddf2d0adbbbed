"""Fixtures of the checkpoint tests."""

import subprocess
import sys

import pytest


@pytest.fixture
def dead_pid() -> str:
    """The pid of a process that has exited (a save killed mid-write leaves such a pid in
    its temporary's name)."""
    return subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
