"""The implicit-ordering zoo (tests/plugins/test_plugin.c, ids 100-149): each variant is
good_streams (streams on real worker threads) with one ordering rule of device.h broken, and
is caught by exactly the intended ordering cases (FAIL, with a message that says what was
out of order), every other direct-suite case as on good_streams."""

from __future__ import annotations

import pytest

from hwport.conformance.suites import ordering

from .direct_run import run_direct, statuses, zoo_target

# variant -> {case id: message needle}; every one is FAIL
ORDERING_FAILURES = {
    "sync_h2d_nowait": {"stream::sync_h2d_waits_all_streams": "copy_h2d into a buffer 3 "
                        "streams were still writing"},
    "sync_d2d_nowait": {"stream::sync_d2d_waits_all_streams": "copy_d2d into a buffer 3 "
                        "streams were still writing"},
    "null_stream_nowait": {"stream::null_stream_waits_all_streams":
                           "copy_h2d_async(NULL stream) into a buffer"},
    "sync_device_null_only": {"device::synchronize_all_streams":
                              "the moment synchronize_device returned"},
    # Waits only for the stream last submitted to: the single-stream sync_copy_waits_for_streams
    # passes it; the cases with several streams do not.
    # Which streams it misses depends on scheduling (the slowest, 0, unless a loaded machine
    # delayed the others more): the message names the first wrong region.
    "sync_one_stream": {
        "stream::sync_h2d_waits_all_streams": "wrong in the region of stream ",
        "stream::sync_d2h_waits_all_streams": "wrong in the region of stream ",
        "stream::sync_d2d_waits_all_streams": "wrong in the region of stream ",
        "stream::null_stream_waits_all_streams": "copy_h2d_async(NULL stream)",
        "device::synchronize_all_streams": "device 0: host memory of copy_d2h_async"},
    "wait_last_event_only": {"stream::wait_several_events": "slowest waited first; a wait was "
                             "dropped); wrong in the region of producer 0"},
    "cross_device_wait_ignored": {"stream::cross_device_event": "a stream of device 1 after "
                                  "waiting for an event recorded on a stream of device 0"},
}
ORDERING_CASES = {"device::synchronize_all_streams",
                  *(f"stream::{name}" for name in ordering.STREAM_CHECKS)}


@pytest.fixture(scope="module")
def good_streams():
    return run_direct(zoo_target("good_streams"))


def test_good_streams_passes_every_ordering_case_with_the_work_really_pending(good_streams):
    for cid in ORDERING_CASES:
        assert str(good_streams[cid].status) == "PASS", (cid, good_streams[cid].message)
    # The call under test came while queued work was still running (query_stream said so), so
    # the broken variants below are caught by what they do, not by a race they happen to lose.
    for cid in ("stream::sync_h2d_waits_all_streams", "stream::sync_d2h_waits_all_streams"):
        assert good_streams[cid].details["pending_at_call"] >= 1, good_streams[cid].details
    assert good_streams["stream::cross_device_event"].details["pairs"] == [[0, 1], [1, 0]]
    assert set(good_streams["device::synchronize_all_streams"].details["devices"]) == {0, 1}


@pytest.mark.parametrize("variant", sorted(ORDERING_FAILURES))
def test_ordering_bug_fails_exactly_the_intended_cases(variant, good_streams):
    failures = ORDERING_FAILURES[variant]
    assert set(failures) <= ORDERING_CASES
    results = run_direct(zoo_target(variant))
    want = dict(statuses(good_streams), **{cid: "FAIL" for cid in failures})
    assert statuses(results) == want
    for cid, needle in failures.items():
        assert needle in results[cid].message, (cid, results[cid].message)
    assert {results[cid].details.get("mismatches", 0) > 0 for cid in failures} == {True}


def test_one_stream_bug_slips_past_the_single_stream_case():
    """Why the ordering cases use several streams: sync_copy_waits_for_streams (one stream)
    passes a plugin whose synchronous calls wait only for the stream last used."""
    results = run_direct(zoo_target("sync_one_stream"), ("stream",))
    assert str(results["stream::sync_copy_waits_for_streams"].status) == "PASS"
    assert str(results["stream::sync_d2h_waits_all_streams"].status) == "FAIL"
