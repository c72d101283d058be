"""The collector settings of a controller process: thresholds, and a full collection's survivors frozen."""

from __future__ import annotations

import gc

import pytest

from engine.common import server_gc


@pytest.fixture
def restored_gc():
    thresholds, callbacks = gc.get_threshold(), list(gc.callbacks)
    yield
    gc.set_threshold(*thresholds)
    gc.callbacks[:] = callbacks
    gc.unfreeze()


def test_thresholds_and_one_callback_however_often_called(restored_gc):
    server_gc.tune_gc_for_server()
    server_gc.tune_gc_for_server()
    assert gc.get_threshold() == server_gc.SERVER_THRESHOLDS
    assert gc.callbacks.count(server_gc._freeze_after_full) == 1


def test_a_full_collection_freezes_its_survivors_and_a_young_one_does_not(restored_gc):
    gc.unfreeze()
    server_gc.tune_gc_for_server()
    kept = [[i] for i in range(1000)]
    gc.collect(0)
    assert gc.get_freeze_count() == 0
    gc.collect()
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)
    del kept  # frozen objects are still freed when their last reference goes
    assert gc.get_freeze_count() <= frozen - 1000
