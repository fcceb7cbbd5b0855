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
def test_a_read_only_or_full_file_system_is_named_not_the_ownership(code: int, advice: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INVOCATION_ID", raising=False)  # not under systemd (the next test is)
    said = unusable_data_dir(DIR, error(code))
    assert os.strerror(code) in said and advice in said and "own" not in said, said


def test_a_read_only_path_under_systemd_names_read_write_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """systemd sets INVOCATION_ID: there the read-only path is most likely ProtectSystem=strict's
    doing, which a remount does not change and a drop-in's ReadWritePaths= does."""
    monkeypatch.setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
    said = unusable_data_dir(Path("/srv/cronwheel"), error(errno.EROFS))
    assert "ProtectSystem=strict" in said and "systemctl edit cronwheel" in said, said
    assert "ReadWritePaths=/srv/cronwheel" in said and "remount" not in said, said
    monkeypatch.delenv("INVOCATION_ID")
    assert "remount it read-write" in unusable_data_dir(DIR, error(errno.EROFS))


def test_any_other_error_is_the_os_error_alone() -> None:
    said = unusable_data_dir(DIR, error(errno.ENOTDIR))
    assert said == f"cannot use the data directory {DIR}: Not a directory ({DIR / 'lock'})"
