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


def replace(h: DirectHost, table: str, name: str, make) -> DirectHost:
    """Replaces one function of the plugin's `table` with make(the real function), as a C
    callback of the same type (HWP_ERROR_INTERNAL should the Python side raise); returns h."""
    real = getattr(getattr(h, TABLES[table][0]), name)
    patch(h, table, **{name: ffi.callback(ffi.typeof(real), make(real), error=8)})
    return h


def after(real, adjust):
    """A stand-in that calls the real function, then adjust(args) when it succeeded."""
    def fn(*args):
        status = real(*args)
        if status == 0:
            adjust(*args)
        return status
    return fn


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


def _set(**fields):
    """A get_properties stand-in that overrides `fields` (a value, or a function of the
    real value)."""
    def adjust(_device, props):
        for name, value in fields.items():
            setattr(props, name, value(getattr(props, name)) if callable(value) else value)
    return lambda real: after(real, adjust)


def test_properties_every_problem_of_every_device_is_named():
    h = replace(dlpack_host(), "device", "get_properties", _set(
        simd_width=0, architecture_minor=-1, max_threads_per_compute_unit=-2,
        max_allocation=lambda _: (1 << 32) + 1, flags=lambda f: f | 1 << 7,
        dlpack_device_type=3,  # not an HWP_DLPackDeviceType value
        architecture=b"\xff\xfe"))
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
    h = replace(dlpack_host(), "device", "get_properties",
                _set(flags=lambda f: f | 1, dlpack_device_id=7))  # HOST_MEMORY; one id for both
    patch(h, "memory", wrap_device_memory=NULL)
    result = assert_fails(h, "device::properties_1_1")
    assert "device 1: DLPack device (12, 7) is also device 0's" in result.message
    assert result.message.count("is also device") == 1
    for d in (0, 1):
        assert f"device {d}: names DLPack device (12, 7) but has no " \
               "memory.wrap_device_memory" in result.message
        assert f"device {d}: names a DLPack device but also sets HWP_DEVICE_HOST_MEMORY" \
            in result.message


def test_an_allocation_past_max_allocation_must_be_refused():
    cap = 1 << 20
    # the zoo's allocate grants up to its 4 GiB total
    granting = replace(dlpack_host(), "device", "get_properties", _set(max_allocation=cap))
    before = granting.stats()
    assert_fails(granting, "device::properties_1_1",
                 f"device 0: allocate({cap + 1} bytes, max_allocation + 1) returned HWP_OK")
    assert granting.stats()["bytes_in_use"] == before["bytes_in_use"]  # freed again

    refusing = replace(dlpack_host(), "device", "get_properties", _set(max_allocation=cap))
    replace(refusing, "memory", "allocate",  # the zoo's own out-of-memory error and message
            lambda real: lambda d, n, out: real(d, 1 << 62 if n > cap else n, out))
    result = run(refusing, "device::properties_1_1")
    assert str(result.status) == "PASS", result.message
    assert set(result.details["over_max_allocation_refused"]) == {0, 1}
    # max_allocation == total_memory (the unpatched zoo): nothing to ask
    plain = run(dlpack_host(), "device::properties_1_1")
    assert plain.details["over_max_allocation_refused"] == {}


def test_device_address_that_ignores_the_offset_fails_only_its_case():
    h = replace(dlpack_host(), "memory", "device_address",
                lambda real: lambda d, buf, _off, out: real(d, buf, 0, out))
    result = assert_fails(h, "memory::device_address",
                          "is not device_address(buffer, 0) + offset at offsets 1 (got base +0)")
    assert result.details["wrong"] == {str(o): 0 for o in (1, 3, 64, 1000, 2049, 4098)}
    # the wrap case addresses memory as consumers do, base + offset: not affected
    assert str(run(h, "memory::wrap_device_memory").status) == "PASS"


def test_device_address_must_refuse_an_offset_past_the_end():
    def unchecked(real):
        def fn(d, buf, offset, out):
            status = real(d, buf, 0, out)
            if status == 0:
                out[0] = ffi.cast("char *", out[0]) + offset
            return status
        return fn

    assert_fails(replace(dlpack_host(), "memory", "device_address", unchecked),
                 "memory::device_address",
                 "device_address(buffer, 4100) of a 4099-byte buffer returned HWP_OK")


def test_a_wrap_that_copies_fails():
    h = dlpack_host()
    real_alloc = h.mem.allocate

    def copy_in(_d, address, nbytes, out):  # the zoo's buffers are host memory
        ffi.memmove(out[0], address, nbytes)

    replace(h, "memory", "wrap_device_memory",
            lambda _real: after(lambda d, _a, n, out: real_alloc(d, n, out), copy_in))
    patch(h, "memory", release_device_buffer=h.mem.deallocate)
    assert_fails(h, "memory::wrap_device_memory", "the write did not reach the memory")


def test_a_wrap_counted_in_the_stats_fails():
    counted = [0]
    h = replace(dlpack_host(), "memory", "wrap_device_memory",
                lambda real: after(real, lambda _d, _a, n, _o: counted.append(n)))
    replace(h, "memory", "get_memory_stats", lambda real: after(
        real, lambda _d, stats: setattr(stats, "bytes_in_use", stats.bytes_in_use
                                        + sum(counted))))
    result = assert_fails(h, "memory::wrap_device_memory",
                          "wrap_device_memory changed the memory stats")
    assert (result.details["after"]["bytes_in_use"] - result.details["before"]["bytes_in_use"]
            == 2048)


def test_releasing_one_wrap_must_not_release_the_other():
    def releases_all(real):
        def fn(d, buf):
            status = real(d, buf)
            while status == 0 and real(d, buf) == 0:  # every import of the address at once
                pass
            return status
        return fn

    h = replace(dlpack_host(), "memory", "release_device_buffer", releases_all)
    assert_fails(h, "memory::wrap_device_memory",
                 "a second wrap of the same address after the first was released: copy_d2h")


def test_wrap_must_refuse_null_and_empty_memory():
    h = replace(dlpack_host(), "memory", "wrap_device_memory",
                lambda real: lambda d, address, n, out: real(d, address, max(n, 1), out))
    assert_fails(h, "memory::wrap_device_memory", "wrap_device_memory(0 bytes) returned HWP_OK")


def test_native_stream_handles_must_be_distinct_and_non_zero():
    one_queue = replace(dlpack_host(), "stream", "native_stream",
                        lambda real: lambda d, _s, out: real(d, NULL, out))
    assert_fails(one_queue, "stream::native_stream", "gave the same handle to different streams")

    def zero_for_null(_d, stream, out):
        if stream == NULL:
            out[0] = 0

    zero = replace(dlpack_host(), "stream", "native_stream",
                   lambda real: after(real, zero_for_null))
    assert_fails(zero, "stream::native_stream", "native_stream gave 0 for the NULL stream")


def test_native_stream_wait_must_refuse_native_zero():
    h = replace(dlpack_host(), "stream", "native_stream_wait",
                lambda real: lambda d, native, s: real(d, native or 1, s))
    assert_fails(h, "stream::native_stream_wait",
                 "native_stream_wait(native 0, A) returned HWP_OK")
