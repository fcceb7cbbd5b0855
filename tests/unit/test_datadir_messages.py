"""The start-up refusal of a data directory gives the advice that fits the OS error: the
errors a test cannot produce as root (EACCES, EPERM, EDQUOT) with real OSError objects;
a read-only and a full file system are refused by a real daemon (test_disk_and_files.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from cronwheel.daemon.datadir import unusable_data_dir

DIR = Path("/var/lib/cronwheel")


def error(code: int) -> OSError:
    return OSError(code, os.strerror(code), str(DIR / "lock"))


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_a_permission_error_says_to_fix_the_ownership(code: int) -> None:
    said = unusable_data_dir(DIR, error(code))
    assert said.startswith(f"cannot use the data directory {DIR}: {os.strerror(code)} ({DIR / 'lock'}). ")
    assert "must own it" in said and "fix the ownership" in said and "--data-dir" in said


@pytest.mark.parametrize(("code", "advice"), [
    (errno.EROFS, "mounted read-only"),
    (errno.ENOSPC, "is full"),
    (errno.EDQUOT, "quota"),
])  # fmt: skip
def test_a_read_only_or_full_file_system_is_named_not_the_ownership(code: int, advice: str) -> None:
    said = unusable_data_dir(DIR, error(code))
    assert os.strerror(code) in said and advice in said and "own" not in said, said


def test_any_other_error_is_the_os_error_alone() -> None:
    said = unusable_data_dir(DIR, error(errno.ENOTDIR))
    assert said == f"cannot use the data directory {DIR}: Not a directory ({DIR / 'lock'})"
