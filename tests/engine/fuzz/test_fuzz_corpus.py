"""Every checked-in fuzz input (tests/fuzz_corpus: the seeds and every crash the fuzzer found)
through every fuzz target: each is taken quietly or refused with one of our one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fuzz.targets import TARGETS
from engine.fuzz.fuzzer import CORPUS_ROOT, rerun

CORPUS_FILES = sorted(p for p in CORPUS_ROOT.glob("*/*") if p.is_file())


@pytest.fixture(scope="module", autouse=True)
def _stop_served_nodes():
    yield
    from engine.fuzz.served_targets import shutdown

    shutdown()  # the served targets' controller and broker, started by their first input


def test_corpus_is_small_and_covers_every_target():
    assert {p.parent.name for p in CORPUS_FILES} == set(TARGETS)
    assert sum(p.stat().st_size for p in CORPUS_FILES) < 1_000_000


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.slow
def test_every_corpus_input_through_target(target: str):
    for path in CORPUS_FILES:
        try:
            rerun(target, path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - name the input in the failure
            pytest.fail(f"{target} on {path.relative_to(CORPUS_ROOT)}: {type(exc).__name__}: {exc}")


def test_target_rejection_check_catches_a_multiline_error(tmp_path: Path):
    # the oracle itself: a documented error over two lines is a finding, not a pass
    from engine.common.errors import StorageError
    from engine.fuzz.targets import BadRejection, check_rejection

    with pytest.raises(BadRejection, match="several lines"):
        check_rejection(StorageError("bad\nthing", path="/x/quorum-state"), "/x/quorum-state")
    with pytest.raises(BadRejection, match="does not name"):
        check_rejection(StorageError("bad thing"), "/x/quorum-state")
    check_rejection(StorageError("bad thing", path="/x/quorum-state"), "/x/quorum-state")
