"""The caching allocator, observed through memory_stats on custom:cpu (and the CPU plugin's
own accounting, which is independent of the allocator's)."""

from __future__ import annotations

import numpy as np

import hwport
from tests.conftest import run_isolated

PLACE = "custom:cpu:1"  # keep these counters apart from other tests' traffic on device 0


def stats() -> dict[str, int]:
    hwport.device.synchronize(PLACE)
    return hwport.device.memory_stats(PLACE)


def make(nbytes: int):
    return hwport.to_tensor(np.zeros(nbytes // 4, np.float32), place=PLACE)


def test_freed_blocks_are_reused_without_calling_the_plugin():
    t = make(4096)
    del t
    before = stats()
    for _ in range(50):
        t = make(4096)
        del t
    after = stats()
    assert after["num_device_allocs"] == before["num_device_allocs"]
    assert after["num_allocs"] == before["num_allocs"] + 50
    assert after["allocated_bytes"] == before["allocated_bytes"]


def test_small_blocks_split_one_segment_and_coalesce_back():
    # In a fresh process: the exact segment counts need a device no other test has touched.
    code = """
        import numpy as np, hwport
        P = "custom:cpu"
        def stats():
            hwport.device.synchronize(P)
            return hwport.device.memory_stats(P)
        def make(nbytes):
            return hwport.to_tensor(np.zeros(nbytes // 4, np.float32), place=P)
        base = stats()
        assert base["allocated_bytes"] == 0 and base["reserved_bytes"] == 0, base
        parts = [make(64 * 1024) for _ in range(8)]  # 8 x 64 KiB: one 2 MiB small segment
        s = stats()
        assert s["num_device_allocs"] == base["num_device_allocs"] + 1, s
        assert s["reserved_bytes"] == 2 << 20, s
        assert s["allocated_bytes"] == 8 * 64 * 1024, s
        del parts[3], parts[3], parts[3]  # three neighbours free -> one 192 KiB hole
        big = make(192 * 1024)  # fits the coalesced hole exactly: no new segment
        s = stats()
        assert s["num_device_allocs"] == base["num_device_allocs"] + 1, s
        del big, parts
        s = stats()
        assert s["allocated_bytes"] == 0, s
        assert s["cached_blocks"] == 1, s  # everything merged back into one free segment
        hwport.device.empty_cache(P)
        s = stats()
        assert s["reserved_bytes"] == 0, s
        assert s["num_device_frees"] == base["num_device_frees"] + 1, s
        assert s["device_bytes_in_use"] == 0, s
        print("ok")
    """
    proc = run_isolated(code, {"HWPORT_CPU_DEVICES": "1"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.strip() == "ok"


def test_sizes_are_rounded_to_classes():
    hwport.device.empty_cache(PLACE)
    before = stats()
    t = hwport.to_tensor(np.zeros(3, np.int8), place=PLACE)
    s = stats()
    assert s["allocated_bytes"] - before["allocated_bytes"] == 512
    assert s["requested_bytes"] - before["requested_bytes"] == 3
    del t


def test_workload_returns_allocated_to_baseline_and_tracks_peak():
    baseline = stats()
    hwport.device.reset_peak_memory_stats(PLACE)
    a = make(1 << 20)
    b = make(3 << 20)
    c = (a + a) * a
    d = b * 2.0
    peak = stats()["peak_allocated_bytes"]
    peak_requested = stats()["peak_requested_bytes"]
    # live at the peak: a, b, c and d (the temporary a + a is gone by then)
    assert peak >= baseline["allocated_bytes"] + (1 << 20) * 2 + (3 << 20) * 2
    # the bytes as asked: exactly those four at most (plus what lived before), never rounded up
    four = (1 << 20) * 2 + (3 << 20) * 2
    assert baseline["requested_bytes"] + four <= peak_requested
    assert peak_requested <= baseline["requested_bytes"] + four + (1 << 20)  # + the a + a temporary
    assert peak_requested <= peak
    del a, b, c, d
    after = stats()
    assert after["allocated_bytes"] == baseline["allocated_bytes"]
    assert after["active_blocks"] == baseline["active_blocks"]
    assert after["peak_allocated_bytes"] == peak


def test_steady_state_makes_no_plugin_allocations():
    x = hwport.to_tensor(np.ones((256, 256), np.float32), place=PLACE)
    for _ in range(3):
        y = (x + x) * x
    before = stats()["num_device_allocs"]
    for _ in range(100):
        y = (x + x) * x
    assert stats()["num_device_allocs"] == before
    np.testing.assert_array_equal(y.numpy(), np.full((256, 256), 2.0, np.float32))


def test_out_of_memory_releases_the_cache_retries_then_raises():
    code = """
        import numpy as np, hwport
        MB = 1 << 20
        P = "custom:cpu"
        a = hwport.to_tensor(np.zeros(40 * MB // 4, np.float32), place=P)
        del a                                    # 40 MiB stays cached (reserved)
        s = hwport.device.memory_stats(P)
        assert s["reserved_bytes"] >= 40 * MB and s["allocated_bytes"] == 0, s
        b = hwport.to_tensor(np.zeros(50 * MB // 4, np.float32), place=P)  # needs the cache back
        s = hwport.device.memory_stats(P)
        assert s["num_cache_flushes"] == 1, s
        np.testing.assert_array_equal(b.numpy()[:4], 0)
        try:
            hwport.to_tensor(np.zeros(20 * MB // 4, np.float32), place=P)
        except hwport.OutOfMemoryError as e:
            msg = str(e)
        else:
            raise SystemExit("no OutOfMemoryError")
        assert "out of memory on custom:cpu:0" in msg, msg
        assert "tried to allocate 20971520 bytes" in msg, msg
        assert "64 MiB" in msg or "67108864 byte limit" in msg, msg
        s = hwport.device.memory_stats(P)
        assert s["num_ooms"] == 1 and s["allocated_bytes"] >= 50 * MB, s
        del b                                    # nothing corrupted: memory usable again
        c = hwport.to_tensor(np.ones(20 * MB // 4, np.float32), place=P)
        assert float((c + c).numpy()[-1]) == 2.0
        del c
        hwport.device.empty_cache(P)
        s = hwport.device.memory_stats(P)
        assert s["allocated_bytes"] == 0 and s["reserved_bytes"] == 0, s
        assert s["device_bytes_in_use"] == 0, s
        print("ok")
    """
    proc = run_isolated(code, {"HWPORT_CPU_MEMORY_LIMIT": "64M", "HWPORT_CPU_DEVICES": "1"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.strip() == "ok"
