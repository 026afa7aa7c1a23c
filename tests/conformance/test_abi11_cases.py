"""The ABI 1.1 cases of the direct suites (device::properties_1_1, memory::device_address,
memory::wrap_device_memory, stream::native_stream, stream::native_stream_wait) catch what they
are meant to: each runs against the zoo's valid `dlpack` plugin with one of its functions
replaced by a C callback that gets one thing wrong (the rest of the plugin stays real), and
must FAIL naming that thing, while the unpatched plugin PASSes. The one zoo variant for these
cases (lazy_native_wait) is in test_zoo.py."""

from __future__ import annotations

import pytest

from hwport.conformance.direct_host import NULL, DirectHost, ffi
from hwport.conformance.model import Case, Result
from hwport.conformance.worker import run_case
from tests.conftest import zoo_plugin_path

from .direct_run import zoo_target

TABLES = {"device": ("dev", "HWP_DeviceTable"), "memory": ("mem", "HWP_MemoryTable"),
          "stream": ("streams", "HWP_StreamTable"), "api": ("api", "HWP_PluginApi")}


def dlpack_host() -> DirectHost:
    h = DirectHost(zoo_plugin_path("dlpack"))
    h.validate()
    h.init_devices()
    h.keep = []
    return h


def patch(h: DirectHost, table: str, **fields) -> None:
    """Gives `h` a copy of one of the plugin's structs with `fields` replaced."""
    attr, ctype = TABLES[table]
    orig = getattr(h, attr)
    copy = ffi.new(f"{ctype} *")
    ffi.memmove(copy, orig, orig.struct_size)
    for name, value in fields.items():
        setattr(copy, name, value)
    h.keep += [copy, *fields.values()]
    setattr(h, attr, copy)


def run(h: DirectHost, case_id: str) -> Result:
    suite, name = case_id.split("::")
    return run_case(zoo_target("dlpack"), Case(suite, name), {suite: {"host": h}})


def assert_fails(h: DirectHost, case_id: str, *needles: str) -> Result:
    result = run(h, case_id)
    assert str(result.status) == "FAIL", (result.status, result.message)
    for needle in needles:
        assert needle in result.message, (needle, result.message)
    return result


ABI11_CASES = ["device::properties_1_1", "memory::device_address",
               "memory::wrap_device_memory", "stream::native_stream",
               "stream::native_stream_wait"]


@pytest.mark.parametrize("case_id", ABI11_CASES)
def test_the_unpatched_dlpack_plugin_passes(case_id):
    result = run(dlpack_host(), case_id)
    assert str(result.status) == "PASS", result.message


@pytest.mark.parametrize("case_id", ABI11_CASES)
def test_a_plugin_of_minor_0_is_not_asked_for_them(case_id):
    h = dlpack_host()
    patch(h, "api", abi_minor=0)
    result = run(h, case_id)
    if case_id.startswith("stream::"):  # the stream functions are judged by presence alone
        assert str(result.status) == "PASS", result.message
    else:
        assert str(result.status) == "NOT_SUPPORTED"
        assert "declares ABI 1.0" in result.message


def test_properties_every_problem_of_every_device_is_named():
    h = dlpack_host()
    real = h.dev.get_properties

    @ffi.callback("HWP_Status(int32_t, HWP_DeviceProperties *)")
    def wrong(device, props):
        status = real(device, props)
        props.simd_width = 0
        props.architecture_minor = -1
        props.max_threads_per_compute_unit = -2
        props.max_allocation = props.total_memory + 1
        props.flags |= 1 << 7
        props.dlpack_device_type = 3  # not a HWP_DLPackDeviceType value
        ffi.memmove(props.architecture, b"\xff\xfe\0", 3)
        return status

    patch(h, "device", get_properties=wrong)
    result = assert_fails(h, "device::properties_1_1")
    for d in (0, 1):
        for needle in ("simd_width 0 < 1", "architecture_minor -1 < 0",
                       "max_threads_per_compute_unit -2 < 0",
                       f"max_allocation {(1 << 32) + 1} > total_memory {1 << 32}",
                       "unknown flag bits 0x80", "dlpack_device_type 3 is not",
                       "architecture is not UTF-8"):
            assert f"device {d}: {needle}" in result.message, (needle, result.message)
    assert result.details["devices"][0]["simd_width"] == 0


def test_properties_dlpack_device_rules():
    h = dlpack_host()
    real = h.dev.get_properties

    @ffi.callback("HWP_Status(int32_t, HWP_DeviceProperties *)")
    def shared(device, props):
        status = real(device, props)
        props.flags |= 1  # HWP_DEVICE_HOST_MEMORY
        props.dlpack_device_id = 7  # both devices
        return status

    patch(h, "device", get_properties=shared)
    patch(h, "memory", wrap_device_memory=NULL)
    result = assert_fails(h, "device::properties_1_1")
    assert "device 1: DLPack device (12, 7) is also device 0's" in result.message
    assert result.message.count("is also device") == 1
    for d in (0, 1):
        assert f"device {d}: names DLPack device (12, 7) but has no " \
               "memory.wrap_device_memory" in result.message
        assert f"device {d}: names a DLPack device but also sets HWP_DEVICE_HOST_MEMORY" \
            in result.message


def _capped_properties(h: DirectHost, cap: int):
    real = h.dev.get_properties

    @ffi.callback("HWP_Status(int32_t, HWP_DeviceProperties *)")
    def capped(device, props):
        status = real(device, props)
        props.max_allocation = cap
        return status

    return capped


def test_an_allocation_past_max_allocation_must_be_refused():
    cap = 1 << 20
    granting = dlpack_host()  # the zoo's allocate grants up to its 4 GiB total
    patch(granting, "device", get_properties=_capped_properties(granting, cap))
    before = granting.stats()
    assert_fails(granting, "device::properties_1_1",
                 f"device 0: allocate({cap + 1} bytes, max_allocation + 1) returned HWP_OK")
    assert granting.stats()["bytes_in_use"] == before["bytes_in_use"]  # freed again

    refusing = dlpack_host()
    real_alloc = refusing.mem.allocate

    @ffi.callback("HWP_Status(int32_t, uint64_t, HWP_Buffer *)")
    def capped_alloc(device, nbytes, out):  # the zoo's own out-of-memory error and message
        return real_alloc(device, 1 << 62 if nbytes > cap else nbytes, out)

    patch(refusing, "device", get_properties=_capped_properties(refusing, cap))
    patch(refusing, "memory", allocate=capped_alloc)
    result = run(refusing, "device::properties_1_1")
    assert str(result.status) == "PASS", result.message
    assert set(result.details["over_max_allocation_refused"]) == {0, 1}
    # max_allocation == total_memory (the unpatched zoo): nothing to ask
    plain = run(dlpack_host(), "device::properties_1_1")
    assert plain.details["over_max_allocation_refused"] == {}


def test_device_address_that_ignores_the_offset_fails_only_its_case():
    h = dlpack_host()
    real = h.mem.device_address

    @ffi.callback("HWP_Status(int32_t, HWP_Buffer, uint64_t, void **)")
    def ignores_offset(device, buf, offset, out):
        return real(device, buf, 0, out)

    patch(h, "memory", device_address=ignores_offset)
    result = assert_fails(h, "memory::device_address",
                          "is not device_address(buffer, 0) + offset at offsets 1 (got base +0)")
    assert result.details["wrong"] == {str(o): 0 for o in (1, 3, 64, 1000, 2049, 4098)}
    # the wrap case addresses memory as consumers do, base + offset: not affected
    assert str(run(h, "memory::wrap_device_memory").status) == "PASS"


def test_device_address_must_refuse_an_offset_past_the_end():
    h = dlpack_host()
    real = h.mem.device_address

    @ffi.callback("HWP_Status(int32_t, HWP_Buffer, uint64_t, void **)")
    def unchecked(device, buf, offset, out):
        status = real(device, buf, 0, out)
        if status == 0 and out != NULL:
            out[0] = ffi.cast("char *", out[0]) + offset
        return status

    patch(h, "memory", device_address=unchecked)
    assert_fails(h, "memory::device_address",
                 "device_address(buffer, 4100) of a 4099-byte buffer returned HWP_OK")


def test_a_wrap_that_copies_fails():
    h = dlpack_host()
    real_alloc, real_free = h.mem.allocate, h.mem.deallocate

    @ffi.callback("HWP_Status(int32_t, void *, uint64_t, HWP_Buffer *)")
    def copying_wrap(device, address, nbytes, out):
        status = real_alloc(device, nbytes, out)
        if status == 0:  # the zoo's buffers are host memory: a copy of what is there now
            ffi.memmove(out[0], address, nbytes)
        return status

    patch(h, "memory", wrap_device_memory=copying_wrap, release_device_buffer=real_free)
    assert_fails(h, "memory::wrap_device_memory", "the write did not reach the memory")


def test_a_wrap_counted_in_the_stats_fails():
    h = dlpack_host()
    real_wrap, real_stats = h.mem.wrap_device_memory, h.mem.get_memory_stats

    @ffi.callback("HWP_Status(int32_t, HWP_MemoryStats *)")
    def counting(device, stats):
        status = real_stats(device, stats)
        stats.bytes_in_use += counted[0]
        return status

    @ffi.callback("HWP_Status(int32_t, void *, uint64_t, HWP_Buffer *)")
    def wrap(device, address, nbytes, out):
        status = real_wrap(device, address, nbytes, out)
        counted[0] += nbytes if status == 0 else 0
        return status

    counted = [0]
    patch(h, "memory", wrap_device_memory=wrap, get_memory_stats=counting)
    result = assert_fails(h, "memory::wrap_device_memory",
                          "wrap_device_memory changed the memory stats")
    assert (result.details["after"]["bytes_in_use"] - result.details["before"]["bytes_in_use"]
            == 2048)


def test_releasing_one_wrap_must_not_release_the_other():
    h = dlpack_host()
    real = h.mem.release_device_buffer

    @ffi.callback("HWP_Status(int32_t, HWP_Buffer)")
    def releases_all(device, buf):
        status = real(device, buf)
        while status == 0 and real(device, buf) == 0:  # every import of the address
            pass
        return status

    patch(h, "memory", release_device_buffer=releases_all)
    assert_fails(h, "memory::wrap_device_memory",
                 "a second wrap of the same address after the first was released: copy_d2h")


def test_wrap_must_refuse_null_and_empty_memory():
    h = dlpack_host()
    real = h.mem.wrap_device_memory

    @ffi.callback("HWP_Status(int32_t, void *, uint64_t, HWP_Buffer *)")
    def lax(device, address, nbytes, out):
        return real(device, address, max(nbytes, 1), out)

    patch(h, "memory", wrap_device_memory=lax)
    assert_fails(h, "memory::wrap_device_memory", "wrap_device_memory(0 bytes) returned HWP_OK")


def _native_stream_patched(make) -> DirectHost:
    """The dlpack plugin with native_stream replaced by make(the real one)."""
    h = dlpack_host()
    patch(h, "stream", native_stream=ffi.callback("HWP_Status(int32_t, HWP_Stream, uintptr_t *)",
                                                  make(h.streams.native_stream)))
    return h


def test_native_stream_handles_must_be_distinct_and_non_zero():
    def one_queue(real):
        return lambda device, stream, out: real(device, NULL, out)

    assert_fails(_native_stream_patched(one_queue), "stream::native_stream",
                 "gave the same handle to different streams")

    def zero_for_null(real):
        def fn(device, stream, out):
            status = real(device, stream, out)
            if status == 0 and stream == NULL:
                out[0] = 0
            return status
        return fn

    assert_fails(_native_stream_patched(zero_for_null), "stream::native_stream",
                 "native_stream gave 0 for the NULL stream")


def test_native_stream_wait_must_refuse_native_zero():
    h = dlpack_host()
    real = h.streams.native_stream_wait

    @ffi.callback("HWP_Status(int32_t, uintptr_t, HWP_Stream)")
    def zero_is_sync(device, native, stream):
        return real(device, native or 1, stream)

    patch(h, "stream", native_stream_wait=zero_is_sync)
    assert_fails(h, "stream::native_stream_wait", "native_stream_wait(native 0, A) returned "
                 "HWP_OK")
