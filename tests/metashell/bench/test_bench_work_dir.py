"""A bench's folder: the one given is used and left; a temporary one goes at the end (even after
a failure) unless kept, and then it is named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metashell.bench.work_dir import bench_root


def test_a_given_folder_is_used_and_left(tmp_path: Path) -> None:
    with bench_root(str(tmp_path / "mine"), prefix="t-", name="fleet", keep=False) as root:
        root.mkdir()
    assert root == tmp_path / "mine" and root.is_dir()


def test_a_temporary_folder_goes_even_after_a_failure() -> None:
    with pytest.raises(RuntimeError):
        with bench_root(None, prefix="metashell-test-bench-", name="fleet", keep=False) as root:
            root.mkdir()
            raise RuntimeError("the bench failed")
    assert root.name == "fleet" and not root.parent.exists()


def test_a_kept_temporary_folder_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with bench_root(None, prefix="metashell-test-bench-", name="archive", keep=True) as root:
        root.mkdir()
    try:
        assert root.is_dir() and capsys.readouterr().out == f"kept: {root}\n"
    finally:
        shutil.rmtree(root.parent)
