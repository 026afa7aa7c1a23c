"""Python plugins (hwport.device_plugins.python) load through the host's own path, run ops,
turn exceptions into statuses, and are skipped with their reason when broken."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.conftest import run_isolated

from .conftest import CUPY_DEVICE, NUMPY_DEVICE, run_ok


def test_numpy_device_loads_like_a_c_plugin_and_runs_ops(plugin_env):
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        rt = hwport.runtime
        (p,) = [p for p in rt.plugins() if p["device_type"] == "numpy"]
        rng = np.random.default_rng(0)
        a = rng.standard_normal((3, 4)).astype("float32")
        b = rng.standard_normal((4,)).astype("float32")
        x = hwport.to_tensor(a, place="custom:numpy")
        y = hwport.to_tensor(b, place="custom:numpy")
        rt.reset_fallback_stats()
        got = {"exp_add": (x.exp() + y).numpy().tolist(),            # broadcast input
               "mul_t": (x.T * 2.0).numpy().tolist(),                 # strided input
               "div": (x / (y.abs() + 1.0)).numpy().tolist()}
        native = {k: v for k, v in rt.fallback_stats().items() if k[1] == "numpy"}
        mm = hwport.matmul(x, x.T).numpy()                            # no kernel: CPU fallback
        fell = {k[0] for k in rt.fallback_stats() if k[1] == "numpy"}

        # Runtime threads at once: each op calls Python callbacks (which take the GIL) from
        # the runtime's C++ code; the parent waits with a timeout, so a deadlock fails.
        import threading
        sums, thread_errors = {}, []
        def work(i):
            try:
                t = hwport.to_tensor(np.full((64,), i, "float32"), place="custom:numpy")
                for _ in range(30):
                    t = (t + 1.0) * 1.0
                hwport.device.synchronize("custom:numpy")
                sums[i] = float(t.numpy().sum())
            except Exception as exc:
                thread_errors.append(repr(exc))
        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads: t.start()
        for t in threads: t.join()
        cupy = [q for q in rt.plugins() if q["device_type"] == "cupy"]
        print(json.dumps({"plugin": p, "errors": rt.plugin_errors(), "got": got,
                          "native_fallbacks": len(native), "fell": sorted(fell),
                          "mm": mm.tolist(), "sums": sums, "thread_errors": thread_errors,
                          "cupy": cupy}))
    """, plugin_env(NUMPY_DEVICE, CUPY_DEVICE))
    doc = json.loads(out.splitlines()[-1])
    p = doc["plugin"]
    assert doc["errors"] == []
    assert doc["thread_errors"] == []
    assert doc["sums"] == {str(i): 64.0 * (i + 30) for i in range(6)}
    _check_cupy_device(doc["cupy"])
    # the host loaded the entry library prepared for the .py, like any library
    assert p["path"].endswith(".so") and "libhwport_py_numpy_device_" in p["path"]
    assert p["abi_version"] == "1.2" and p["device_count"] == 1 and not p["has_streams"]
    assert {"memory.get_memory_stats", "memory.host_address"} <= set(p["optional"])
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype("float32")
    b = rng.standard_normal((4,)).astype("float32")
    np.testing.assert_allclose(doc["got"]["exp_add"], np.exp(a) + b, rtol=1e-6)
    np.testing.assert_array_equal(doc["got"]["mul_t"], a.T * np.float32(2))
    np.testing.assert_array_equal(doc["got"]["div"], a / (np.abs(b) + np.float32(1)))
    assert doc["native_fallbacks"] == 0  # exp, add, multiply, abs, divide, copy: its own
    assert "matmul" in doc["fell"]
    np.testing.assert_allclose(doc["mm"], a @ a.T, rtol=1e-5, atol=1e-6)


BROKEN_KERNEL = '''
import numpy as np
from hwport.device_plugins.python import OUT_OF_MEMORY, Kernel, PluginError, Plugin

class Faulty(Plugin):
    device_type = "faulty"
    def synchronize(self, device): pass
    def allocate(self, device, nbytes):
        if nbytes > 1 << 20:
            raise PluginError(OUT_OF_MEMORY, "the faulty device holds 1 MiB")
        return bytearray(nbytes)
    def copy_h2d(self, device, dst, off, src): dst[off:off + len(src)] = src
    def copy_d2h(self, device, dst, src, off): dst[:] = src[off:off + len(dst)]
    def copy_d2d(self, device, dst, do, src, so, n): dst[do:do + n] = src[so:so + n]
    def kernels(self):
        def add(call):
            raise ValueError("boom in add")
        def exp(call):
            raise KeyboardInterrupt  # not even this crosses the ABI
        yield Kernel("add", "float32", add)
        yield Kernel("exp", "float32", exp)
'''


def test_exceptions_become_statuses_with_their_text(tmp_path, plugin_env):
    plugin = tmp_path / "faulty.py"
    plugin.write_text(BROKEN_KERNEL)
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        x = hwport.to_tensor(np.ones(4, "float32"), place="custom:faulty")
        seen = {}
        for name, fn in {"add": lambda: (x + x).numpy(), "exp": lambda: x.exp().numpy(),
                         "oom": lambda: hwport.zeros([1 << 19], "float32",
                                                     place="custom:faulty").numpy()}.items():
            try:
                fn()
                seen[name] = "no error"
            except Exception as exc:
                seen[name] = f"{type(exc).__name__}: {exc}"
        seen["after"] = x.numpy().tolist()  # the plugin still works
        print(json.dumps(seen))
    """, plugin_env(plugin))
    seen = json.loads(out.splitlines()[-1])
    assert "kernel add[float32]: ValueError: boom in add (at faulty.py:" in seen["add"]
    assert "HWP_ERROR_INTERNAL" in seen["add"]
    assert "kernel exp[float32]: KeyboardInterrupt" in seen["exp"]
    assert seen["oom"].startswith("OutOfMemoryError") and "holds 1 MiB" in seen["oom"]
    assert seen["after"] == [1.0, 1.0, 1.0, 1.0]


def test_broken_python_plugins_are_skipped_with_their_reason(tmp_path, plugin_env):
    files = {
        "raises.py": "raise ImportError('the vendor SDK is missing')\n",
        "empty.py": "x = 1\n",
        "aborts.py": ("import os\nfrom hwport.device_plugins.python import Plugin\n"
                      "class A(Plugin):\n    device_type = 'aborts'\n"
                      "    def __init__(self):\n        os.abort()\n"),
        "badtype.py": ("from hwport.device_plugins.python import Plugin\n"
                       "class B(Plugin):\n    device_type = 'Bad-Type'\n"
                       "    def synchronize(self, d): pass\n"
                       "    def allocate(self, d, n): return bytearray(n)\n"
                       "    copy_h2d = copy_d2h = copy_d2d = synchronize\n"),
    }
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    paths.append(tmp_path / "missing.py")
    out = run_ok("""
        import json
        import hwport
        print(json.dumps({"errors": hwport.runtime.plugin_errors(),
                          "types": [p["device_type"] for p in hwport.runtime.plugins()],
                          "cpu": hwport.to_tensor([1.0, 2.0]).exp().numpy().tolist()}))
    """, plugin_env(*paths))
    doc = json.loads(out.splitlines()[-1])
    reasons = {Path(e["path"]).name: e["reason"] for e in doc["errors"]}
    by_stem = {}
    for name, reason in reasons.items():
        stem = name.removeprefix("libhwport_py_").rsplit("_", 1)[0]
        by_stem[stem.removesuffix(".py")] = reason
    assert "ImportError: the vendor SDK is missing" in by_stem["raises"]
    assert "defines 0 Plugin subclasses" in by_stem["empty"]
    # the isolated probe ran the Python init: the abort is a reason, not a dead host
    assert "crashed with signal 6" in by_stem["aborts"]
    assert "during hwport_plugin_init" in by_stem["aborts"]
    assert "device type 'Bad-Type' is invalid" in by_stem["badtype"]
    assert "no such Python file" in by_stem["missing"]
    assert doc["types"][0] == "cpu" and "aborts" not in doc["types"]
    assert doc["cpu"][0] == 2.718281828459045 or abs(doc["cpu"][0] - 2.7182817) < 1e-6


def test_an_entry_point_names_a_plugin_class(tmp_path, plugin_env):
    site = tmp_path / "site"
    pkg = site / "mydev_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from hwport.device_plugins.python import numpy_device

        class MyDev(numpy_device.NumpyDevice):
            device_type = "mydev"
            version = "2.0.1"
    """))
    info = site / "mydev_plugin-2.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mydev-plugin\nVersion: 2.0.1\n")
    (info / "entry_points.txt").write_text("[hwport.plugins]\nmydev = mydev_plugin:MyDev\n")
    env = plugin_env(PYTHONPATH=str(site))
    env.pop("HWPORT_PLUGIN_PATH")
    out = run_ok("""
        import json
        import hwport
        (p,) = [p for p in hwport.runtime.plugins() if p["device_type"] == "mydev"]
        x = hwport.to_tensor([1.0, 4.0], place="custom:mydev").sqrt()
        print(json.dumps({"version": p["plugin_version"], "x": x.numpy().tolist(),
                          "errors": hwport.runtime.plugin_errors()}))
    """, env)
    doc = json.loads(out.splitlines()[-1])
    assert doc == {"version": "2.0.1", "x": [1.0, 2.0], "errors": []}


def _check_cupy_device(found: list[dict]) -> None:
    """cupy_device loads everywhere; without CuPy or a GPU it has no device and says why."""
    (p,) = found
    try:
        import cupy

        gpus = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no GPU here
        gpus = 0
    if gpus:
        assert p["device_count"] == gpus and p["num_kernels"] > 0
    else:
        assert p["device_count"] == 0 and p["num_kernels"] == 0
        assert "CuPy is not installed" in p["device_count_note"] or \
            "no CUDA device through CuPy" in p["device_count_note"]


# A regression test: empty_cache released the GIL and then held the allocator's mutex while it
# called the plugin's deallocate, which a Python plugin runs under the GIL; a thread holding
# the GIL and allocating waited for that mutex: a deadlock (now the GIL stays held).
def test_empty_cache_while_another_thread_allocates(plugin_env):
    proc = run_isolated("""
        import threading, time
        import numpy as np
        import hwport
        stop = False
        def churn():
            while not stop:
                xs = [hwport.to_tensor(np.ones(1 << 16, "float32"), place="custom:numpy")
                      for _ in range(8)]
                del xs
        def flush():
            while not stop:
                hwport.runtime._core.empty_cache("custom:numpy")
        threads = [threading.Thread(target=churn), threading.Thread(target=flush)]
        for t in threads: t.start()
        time.sleep(1)
        stop = True
        for t in threads: t.join()
        print("done")
    """, env=plugin_env(NUMPY_DEVICE), timeout=30)
    assert proc.stdout.strip() == "done"
