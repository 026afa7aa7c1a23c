"""What the ABI 1.1 cases of the direct suites share: the device property flags and DLPack
device types the headers define, whether a plugin fills the 1.1 properties, the DLPack device
it names, and memory.device_address as an integer.

device.h: a plugin of minor >= 1 fills max_allocation ... dlpack_device_id (a host reads them
only when struct_size covers them); a device whose properties name a dlpack_device_type
exchanges its memory with other frameworks through memory.device_address /
wrap_device_memory / release_device_buffer, and its streams through stream.native_stream /
native_stream_wait.
"""

from __future__ import annotations

import functools

from ..model import NotSupported


@functools.cache
def known_flags() -> int:
    """Every HWP_DeviceFlag bit the headers define."""
    from ..direct_host import ffi

    bits = 0
    for value in ffi.typeof("enum HWP_DeviceFlag").elements:
        bits |= value
    return bits


@functools.cache
def dlpack_types() -> dict[int, str]:
    """HWP_DLPackDeviceType: {value: name}."""
    from ..direct_host import ffi

    return dict(ffi.typeof("enum HWP_DLPackDeviceType").elements)


def require_abi_1_1(h) -> None:
    """NOT_SUPPORTED unless the plugin declares minor >= 1 and has get_properties."""
    h.require("device", "get_properties")
    if h.api.abi_minor < 1:
        raise NotSupported(f"the plugin declares ABI {h.api.abi_major}.{h.api.abi_minor}: the "
                           f"1.1 device properties (and DLPack exchange) are not part of it")


def dlpack_device(h, device: int = 0) -> tuple[int, int]:
    """(dlpack_device_type, dlpack_device_id) of `device`; NOT_SUPPORTED when the plugin names
    no DLPack device there (its memory is then never exchanged zero-copy)."""
    require_abi_1_1(h)
    p = h.properties(device)
    if p.dlpack_device_type == 0:
        raise NotSupported(f"device {device} names no DLPack device (dlpack_device_type 0): "
                           f"its memory is not exchanged with other frameworks")
    return int(p.dlpack_device_type), int(p.dlpack_device_id)


def address(h, buf, offset: int = 0, device: int = 0) -> int:
    """memory.device_address(buf, offset) as an integer (must succeed)."""
    from ..direct_host import ffi

    out = ffi.new("void **")
    fn = h.require("memory", "device_address")
    h.check(fn(device, buf, offset, out), f"device_address(buffer, {offset})")
    return int(ffi.cast("uintptr_t", out[0]))
