"""Loading with the garbage collector paused: it is always back as it was, however the loads nest,
overlap or fail."""

from __future__ import annotations

import gc
import threading

import pytest

from memtree_mcp.host import heap
from memtree_mcp.host.heap import collector_paused


@pytest.fixture(autouse=True)
def collector_on() -> None:
    gc.enable()


def test_the_collector_is_off_inside_and_back_on_after_even_when_the_block_fails() -> None:
    with collector_paused():
        assert not gc.isenabled()
        loaded = [[n] for n in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0, "only a server freezes what a load made"
    del loaded
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a load that failed")
    assert gc.isenabled()


def test_nested_and_overlapping_pauses_turn_it_back_on_only_when_the_last_one_leaves() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other_load() -> None:
        with collector_paused():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other_load)
    with collector_paused():
        thread.start()
        assert inside.wait(10)
        with collector_paused():
            assert not gc.isenabled()
    assert not gc.isenabled(), "another load is still under way"
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_application_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_server_freezes_what_a_load_made_out_of_later_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    heap.freeze_after_loads()
    try:
        with collector_paused():
            loaded = [[n] for n in range(1000)]
        assert gc.get_freeze_count() >= len(loaded)
    finally:
        heap.freeze_after_loads(False)
        gc.unfreeze()
