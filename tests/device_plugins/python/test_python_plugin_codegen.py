"""The codegen table of Python plugins (codegen_* methods of Plugin -> HWP_CodegenTable):

- the C table's contract, driven through the C ABI by hwcheck's direct host on a toy target
  (no compiler needed): target info within the host's struct_size, dialect refusal, compile
  logs (CompileError, any other exception) within log_capacity, *out untouched on error,
  functions cached per module, launch checks and the arguments the plugin receives, unload,
  serialize's size query and capacity, deserialize of bad bytes, a device without a target,
  and incomplete method sets refused at load;
- cupy_device's "cuda-c++17" target (NVRTC): without CuPy or a GPU it loads with its table and
  0 devices (skipped cleanly); where both are, the same ops run through NVRTC-built kernels;
- pyopencl_device's "opencl-c-1.2" target on PoCL: a fused group compiled by to_static's CINN
  backend, ops the plugin has no kernel for run by the eager JIT (no CPU fallback), a compile
  error's build log. The full hwcheck certification is test_python_plugin_hwcheck's (slow).
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from .conftest import CUPY_DEVICE, PYOPENCL_DEVICE, run_ok

TOY = '''
import numpy as np

from hwport.device_plugins.python import (CODEGEN_SERIALIZE, NOT_FOUND, CodegenTarget,
                                          CompileError, Plugin, PluginError)


class Toy(Plugin):
    device_type = "toycg"

    def __init__(self):
        self.launches = []

    def device_count(self):
        return 2

    def synchronize(self, device):
        pass

    def allocate(self, device, nbytes):
        return np.zeros(nbytes, np.uint8)

    def copy_h2d(self, device, dst, dst_offset, src):
        dst[dst_offset:dst_offset + len(src)] = src

    def copy_d2h(self, device, dst, src, src_offset):
        dst[:] = src.data[src_offset:src_offset + len(dst)]

    def copy_d2d(self, device, dst, dst_offset, src, src_offset, nbytes):
        dst[dst_offset:dst_offset + nbytes] = src[src_offset:src_offset + nbytes]

    def codegen_target(self, device):
        if device == 1:
            return None
        return CodegenTarget(("toy",), "toy-arch", CODEGEN_SERIALIZE, simd_width=4,
                             max_group_size=64, compute_units=3, max_grid_size=1000)

    def codegen_compile(self, device, dialect, source, options):
        if source == "bad":
            raise CompileError("toy.c:1: error: 'bad' is not a kernel\\n" + "x" * 100)
        if source == "boom":
            raise RuntimeError("the toy compiler crashed")
        return {"source": source, "options": options}

    def codegen_function(self, module, name):
        if name not in module["source"].split():
            raise PluginError(NOT_FOUND, f"no kernel {name!r}")
        return name

    def codegen_launch(self, device, function, stream, grid, group, args):
        self.launches.append((function, grid, group, [
            (a.buffer is not None, a.byte_offset) if hasattr(a, "byte_offset") else a
            for a in args]))

    def codegen_serialize(self, module):
        return ("TOY:" + module["source"]).encode()

    def codegen_deserialize(self, device, dialect, data):
        if not data.startswith(b"TOY:"):
            raise ValueError("not toy bytes")
        return {"source": data[4:].decode(), "options": ""}
'''


def test_the_codegen_table_keeps_the_c_contract(tmp_path, plugin_env):
    (tmp_path / "toycg.py").write_text(TOY)
    out = run_ok(f"""
        import json
        from hwport.conformance.codegen_host import BufferArg, Codegen, is_sentinel
        from hwport.conformance.direct_host import DirectHost, NULL, ffi
        from hwport.device_plugins.python import prepare, tables

        h = DirectHost(prepare({str(tmp_path / "toycg.py")!r}))
        assert h.api is not None, h.init_message
        toy = tables._LIVE[-1].plugin
        cg = Codegen(h)
        seen = {{"fns": {{n: cg.fn(n) is not None for n in (
            "get_target_info", "compile", "get_function", "launch", "unload", "serialize",
            "deserialize")}}}}
        status, info = cg.target_info(0)
        seen["info"] = [status, info.to_json()]
        # an older host's shorter struct: nothing written past its struct_size
        status, raw = cg.raw_target_info(0, struct_size=ffi.offsetof(
            "HWP_CodegenTargetInfo", "flags"))
        seen["short"] = [status, int(raw.flags), int(raw.simd_width), raw.dialects != NULL]
        seen["no_target"] = [cg.target_info(1)[0], h.last_error()]
        seen["bad_device"] = cg.target_info(7)[0]

        status, module, log = cg.compile(0, "c99", "k")
        seen["dialect"] = [status, is_sentinel(module), log, h.last_error()]
        status, module, log = cg.compile(0, "toy", "bad", log_capacity=16)
        seen["bad"] = [status, is_sentinel(module), log, h.last_error(),
                       cg.last_log_raw[16:] == b"\\xab" * 64]
        status, module, log = cg.compile(0, "toy", "boom")
        seen["boom"] = [status, log, h.last_error()]

        status, module, log = cg.compile(0, "toy", "k other", options=None)
        assert status == 0, h.last_error()
        seen["same_function"] = cg.get_function(module, "k")[1] == cg.get_function(module, "k")[1]
        status, fn = cg.get_function(module, "missing")
        seen["missing"] = [status, is_sentinel(fn)]
        _, fn = cg.get_function(module, "k")
        buf = h.alloc(64)
        def launch(grid, group, args, **kw):
            return [cg.launch(0, fn, grid, group, args, **kw), h.last_error()]
        seen["ok"] = launch((2, 3, 1), (8, 2, 1), [BufferArg(buf, 8), 5, 2.5, BufferArg(NULL, 0)])
        seen["grid0"] = launch((0, 1, 1), (1, 1, 1), [])
        seen["grid_past_max"] = launch((1001, 1, 1), (1, 1, 1), [])
        seen["group_past_max"] = launch((1, 1, 1), (8, 9, 1), [])
        seen["null"] = launch((1, 1, 1), (1, 1, 1), [], null_launch=True)
        seen["offset_past_end"] = launch((1, 1, 1), (1, 1, 1), [BufferArg(buf, 65)])
        seen["other_device"] = [cg.fn("launch")(1, fn, NULL, NULL), h.last_error()]
        seen["launches"] = toy.launches

        status, data = cg.serialize(module)
        seen["serialize"] = [status, data.decode(), cg.serialize_into(module, len(data) - 1)]
        seen["unload"] = cg.unload(module)
        seen["after_unload"] = [launch((1, 1, 1), (1, 1, 1), [])[0],
                                cg.get_function(module, "k")[0], cg.unload(module)]
        status, back = cg.deserialize(0, "toy", data)
        seen["deserialize"] = [status, cg.get_function(back, "other")[0], cg.unload(back)]
        status, junk = cg.deserialize(0, "toy", b"garbage")
        seen["junk"] = [status, is_sentinel(junk), h.last_error()]
        seen["junk_dialect"] = cg.deserialize(0, "c99", data)[0]
        h.free(buf)
        print(json.dumps(seen))
    """, plugin_env())
    s = json.loads(out.splitlines()[-1])
    assert all(s["fns"].values()), s["fns"]
    assert s["info"] == [0, {"dialects": ["toy"], "architecture": "toy-arch",
                             "flags": ["SERIALIZE"], "simd_width": 4,
                             "preferred_vector_width": 1, "max_group_size": 64,
                             "compute_units": 3, "local_memory_bytes": 0,
                             "max_grid_size": 1000}]
    assert s["short"] == [0, 0, 0, True]
    assert s["no_target"][0] == 3 and "device 1 has no codegen target" in s["no_target"][1]
    assert s["bad_device"] == 1
    # a dialect the target does not list: NOT_SUPPORTED, with the reason in the log too
    status, untouched, log, err = s["dialect"]
    assert status == 3 and untouched and "'c99' is not accepted" in log and "toy" in err
    # CompileError: INVALID_ARGUMENT, its log truncated within log_capacity, NUL-terminated
    status, untouched, log, err, past = s["bad"]
    assert status == 1 and untouched and past
    assert log == "toy.c:1: error:"  # 15 bytes and the NUL
    assert err.startswith("codegen.compile: the source does not compile")
    status, log, err = s["boom"]
    assert status == 8 and "RuntimeError: the toy compiler crashed" in log
    assert "RuntimeError: the toy compiler crashed" in err
    assert s["same_function"] is True
    assert s["missing"] == [5, True]
    assert s["ok"][0] == 0
    assert s["launches"] == [["k", [2, 3, 1], [8, 2, 1], [[True, 8], 5, 2.5, [False, 0]]]]
    for case in ("grid0", "grid_past_max", "group_past_max", "null", "offset_past_end",
                 "other_device"):
        assert s[case][0] == 1, (case, s[case])
    assert "at most 64 threads" in s["group_past_max"][1]
    assert "compiled for device 0, not 1" in s["other_device"][1]
    assert s["serialize"] == [0, "TOY:k other", 1]
    assert s["unload"] == 0 and s["after_unload"] == [1, 1, 1]
    assert s["deserialize"] == [0, 0, 0]
    status, untouched, err = s["junk"]
    assert status == 1 and untouched and "ValueError: not toy bytes" in err
    assert s["junk_dialect"] == 3


@pytest.mark.parametrize("drop, reason", [
    ("codegen_launch", "defines codegen_target but not codegen_launch"),
    ("codegen_deserialize", "only one of codegen_serialize / codegen_deserialize"),
])
def test_an_incomplete_codegen_target_is_a_load_error(tmp_path, plugin_env, drop, reason):
    (tmp_path / "toycg.py").write_text(TOY.replace(f"def {drop}(", f"def _{drop}("))
    out = run_ok("""
        import json
        import hwport
        print(json.dumps(hwport.runtime.plugin_errors()))
    """, plugin_env(tmp_path / "toycg.py"))
    (error,) = json.loads(out.splitlines()[-1])
    assert reason in error["reason"], error


def test_pyopencl_device_compiles_fused_groups_and_jits_ops(tmp_path, plugin_env):
    if importlib.util.find_spec("pyopencl") is None:
        pytest.skip("pyopencl is not installed")
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        from hwport.cinn_backends import compile as cc
        from hwport.runtime import _core
        rt = hwport.runtime
        where = "custom:pyopencl"
        if not any(p["device_type"] == "pyopencl" and p["device_count"]
                   for p in rt.plugins()):
            print(json.dumps({"skip": rt.plugin_errors() or "0 devices"}))
            raise SystemExit
        seen = {"info": _core.codegen_target_info(where)}
        rng = np.random.default_rng(0)
        a = rng.standard_normal((5, 33)).astype(np.float32)
        w = rng.standard_normal(33).astype(np.float32)
        x, wt = hwport.to_tensor(a, place=where), hwport.to_tensor(w, place=where)

        # a compiled kernel: an RMSNorm group fused by to_static's CINN backend
        def rms(x, w):
            return x * hwport.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        cc.reset_stats()
        static = hwport.jit.to_static(rms, backend="CINN")
        static(x, wt)
        got = static(x, wt).numpy()
        (entry,) = static._cache.values()
        seen["fused"] = {"launched": "launch cinn_" in entry.executor._static.impl.describe(),
                         "fallbacks": int(cc.STATS["fallbacks"]),
                         "err": float(np.abs(got - a / np.sqrt((a * a).mean(-1, keepdims=True)
                                                               + 1e-6) * w).max())}

        # eager ops the plugin has no kernel for: the eager JIT compiles them
        rt.reset_fallback_stats()
        ops = {"sum": (x.sum(axis=-1), a.sum(-1)),
               "maximum": (hwport.maximum(x, wt), np.maximum(a, w)),
               "cast": (x.astype("int32"), a.astype(np.int32))}
        seen["jit"] = {k: float(np.abs(v.numpy().astype(np.float64) - want).max())
                       for k, (v, want) in ops.items()}
        seen["fell"] = [list(k) for k in rt.fallback_stats()]
        seen["compiled"] = sorted(k[0] for k in rt.compiled_stats() if k[1] == "pyopencl")
        try:
            _core.codegen_compile(where, "opencl-c-1.2",
                                  "__kernel void f(__global int *p) { p[0] = no_such_name; }", "")
        except rt.CodegenCompileError as exc:
            seen["log"] = exc.log
        print(json.dumps(seen))
    """, plugin_env(PYOPENCL_DEVICE, HWPORT_CINN_CACHE_DIR=str(tmp_path / "cinn")))
    s = json.loads(out.splitlines()[-1])
    if "skip" in s:
        pytest.skip(f"pyopencl_device has no device here: {s['skip']}")
    assert s["info"]["dialects"] == ["opencl-c-1.2"]
    assert s["info"]["is_simt"] and s["info"]["serialize"]
    assert s["fused"]["launched"] and s["fused"]["fallbacks"] == 0, s["fused"]
    assert s["fused"]["err"] < 1e-4, s["fused"]
    assert s["jit"]["sum"] < 1e-4 and s["jit"]["maximum"] == 0 and s["jit"]["cast"] == 0
    assert s["fell"] == []
    assert {"sum", "maximum", "cast"} <= set(s["compiled"]), s["compiled"]
    assert "no_such_name" in s["log"]


def test_cupy_device_has_an_nvrtc_target_or_skips_cleanly(tmp_path, plugin_env):
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        rt = hwport.runtime
        (p,) = [q for q in rt.plugins() if q["device_type"] == "cupy"]
        seen = {"plugin": p, "errors": rt.plugin_errors()}
        if p["device_count"]:
            from hwport.runtime import _core
            where = "custom:cupy"
            seen["info"] = _core.codegen_target_info(where)
            a = np.linspace(-3, 3, 4099, dtype=np.float32)
            x = hwport.to_tensor(a, place=where)
            rt.reset_fallback_stats()
            seen["sum"] = float(abs(x.sum().numpy() - a.sum()))
            seen["cast"] = x.astype("int32").numpy().tolist() == a.astype(np.int32).tolist()
            seen["fell"] = [list(k) for k in rt.fallback_stats()]
            seen["compiled"] = sorted(k[0] for k in rt.compiled_stats() if k[1] == "cupy")
            try:
                _core.codegen_compile(where, "cuda-c++17", 'extern "C" __global__ void f(int *p) '
                                      "{ p[0] = no_such_name; }", "")
            except rt.CodegenCompileError as exc:
                seen["log"] = exc.log
        print(json.dumps(seen))
    """, plugin_env(CUPY_DEVICE, HWPORT_CINN_CACHE_DIR=str(tmp_path / "cinn")))
    s = json.loads(out.splitlines()[-1])
    p = s["plugin"]
    assert s["errors"] == [] and p["has_codegen_target"] and "codegen" in p["optional"], s
    if not p["device_count"]:
        assert p["device_count_note"], p
        pytest.skip(f"cupy_device has no device here: {p['device_count_note']}")
    assert s["info"]["dialects"] == ["cuda-c++17"] and s["info"]["serialize"], s["info"]
    assert s["info"]["architecture"].startswith("sm_"), s["info"]
    assert s["sum"] < 1e-2 and s["cast"] and s["fell"] == [], s
    assert {"sum", "cast"} <= set(s["compiled"]), s["compiled"]
    assert "no_such_name" in s["log"]
