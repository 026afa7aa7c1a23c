"""hwport quick start: tensors on a plugin device, checked against numpy.

Runs on the reference CPU plugin, `place="custom:cpu"`; any other plugin works the same way
with its own `custom:<device_type>`. Exits non-zero when a result is wrong.

    python examples/quickstart.py            # after `bash scripts/setup.sh`
"""

from __future__ import annotations

import pprint
import sys

import numpy as np

import hwport

PLACE = "custom:cpu"


def section(title: str) -> None:
    print(f"\n--- {title}")


def main() -> int:
    section("devices")
    device_types = hwport.device.get_all_custom_device_type()
    print("custom device types:", device_types)
    if "cpu" not in device_types:
        print(f"the CPU plugin did not load; {PLACE} is unavailable. Load errors:")
        pprint.pprint(hwport.runtime.plugin_errors())
        return 1
    print("current device:", hwport.get_device())

    section(f"tensors on {PLACE}")
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.full((2, 3), 0.5, dtype=np.float32)
    row_np = np.array([10.0, 20.0, 30.0], dtype=np.float32)

    a = hwport.to_tensor(a_np, place=PLACE)
    b = hwport.to_tensor(b_np, place=PLACE)
    row = hwport.to_tensor(row_np, place=PLACE)
    print("a =", a)
    print("b =", b)

    checks = {
        "a + b": (a + b, a_np + b_np),
        "a * b": (a * b, a_np * b_np),
        "a + row (broadcast (2, 3) with (3,))": (a + row, a_np + row_np),
        "(a + b) * row": ((a + b) * row, (a_np + b_np) * row_np),
    }
    for name, (got, want) in checks.items():
        got_np = got.numpy()
        print(f"{name} =\n{got_np}")
        assert got_np.shape == want.shape, f"{name}: shape {got_np.shape} != {want.shape}"
        assert got_np.dtype == want.dtype, f"{name}: dtype {got_np.dtype} != {want.dtype}"
        np.testing.assert_allclose(got_np, want, rtol=1e-6, err_msg=name)

    section(f"memory_stats({PLACE!r})")
    pprint.pprint(hwport.device.memory_stats(PLACE))

    section("DLPack round trip with numpy")
    c = a * b
    c_np = np.from_dlpack(c)  # hwport -> numpy
    print("np.from_dlpack(a * b) =\n", c_np, sep="")
    np.testing.assert_allclose(c_np, a_np * b_np, rtol=1e-6, err_msg="np.from_dlpack")

    d = hwport.from_dlpack(a_np)  # numpy -> hwport
    print("hwport.from_dlpack(a_np) =", d)
    np.testing.assert_array_equal(d.numpy(), a_np, err_msg="hwport.from_dlpack")

    print("\nquickstart: OK (every result matches numpy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
