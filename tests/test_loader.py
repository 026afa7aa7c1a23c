"""Plugin discovery and loading: a broken plugin is skipped with a clear reason and never breaks
`import hwport`; version negotiation (newer and older minors) works; the CPU fallback is counted
and can be turned into an error.

Plugin discovery happens once, at import, so every scenario runs in a fresh interpreter
(`sys.executable -c ...`) with its own environment. The plugins come from the test zoo built
from tests/plugins (see the list at the top of tests/plugins/test_plugin.c).

The last part checks the zoo itself with a tiny stand-alone C host (tests/plugins/
zoo_host_check.c), so that a bug in a test plugin is told apart from a bug in the runtime.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ABI_INCLUDE_DIR, INSTALL_ROOT, REPO_ROOT
from tests.conftest import zoo_plugin_path as plugin_path

# The headers' minor version (what the zoo's plugins declare; older/newer_minor relative to it).
MINOR = int(re.search(r"#define HWP_ABI_VERSION_MINOR (\d+)",
                      (ABI_INCLUDE_DIR / "hwport" / "types.h").read_text()).group(1))

GOOD_VARIANTS = ["good", "newer_minor", "older_minor"]

# variant -> substrings the reason in plugin_errors() must contain
BAD_VARIANTS = {
    "missing_entry": ["missing entry point 'hwport_plugin_init'"],
    "wrong_major": ["ABI major version 2"],
    "short_struct": ["HWP_PluginApi.struct_size"],
    "short_table": ["HWP_MemoryTable.struct_size"],
    "missing_required": ["required function HWP_MemoryTable.copy_d2d is NULL"],
    "init_error": ["hwport_plugin_init failed", "simulated driver failure"],
    "null_api": ["returned no HWP_PluginApi"],
    "bad_device_type": ["device type"],
    # caught by the isolated probe before the host process runs their init
    "crash_init": ["crashed with signal 11", "isolated probe process"],
    "abort_init": ["crashed with signal 6", "isolated probe process"],
    "hang_init": ["did not return within 3.0 s", "isolated probe process"],
    # the probe counts only when it ran to its end: exit() anywhere in loading is a failure
    "exit_constructor": ["exited with status 0", "constructor", "isolated probe process"],
    "exit0_init": ["exited with status 0", "during hwport_plugin_init", "isolated probe process"],
    "exit3_init": ["exited with status 3", "during hwport_plugin_init", "isolated probe process"],
    # the probe reads what the host would read, so a garbage pointer crashes it, not the host
    "garbage_device_type": ["crashed with signal 11", "device_type", "isolated probe process"],
    "garbage_last_error": ["crashed with signal 11", "get_last_error", "isolated probe process"],
}

# Without the probe (HWPORT_PLUGIN_PROBE=0) the host's own fault-free reads catch these.
UNPROBED_VARIANTS = {
    "garbage_device_type": ["HWP_PluginApi.device_type 0xbad0", "readable"],
    "garbage_last_error": ["HWP_PluginApi.get_last_error returned 0xbad8", "readable"],
}

MULTIPLY_NAMES = ("multiply", "mul")

RESULT_MARK = "@@HWPORT_TEST_RESULT@@"

# Runs first in every child interpreter: helpers that compute on a place and return what they
# got next to the numpy reference, as JSON-friendly lists.
PRELUDE = r"""
import json, os, sys
import numpy as np
import hwport
from hwport import runtime as rt

result = {}

A = ((np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) * np.float32(0.75))
B = np.linspace(-3.0, 3.0, 6, dtype=np.float32).reshape(2, 3)
ROW = np.array([10.5, -20.25, 30.0], dtype=np.float32)
COL = np.array([[1.5], [-2.0]], dtype=np.float32)

def binop(op, place, a=A, b=B):
    ta = hwport.to_tensor(a, place=place)
    tb = hwport.to_tensor(b, place=place)
    out = ta + tb if op == "add" else ta * tb
    got = np.asarray(out.numpy())
    want = a + b if op == "add" else a * b
    return {"got": got.tolist(), "want": want.tolist(), "dtype": str(got.dtype),
            "shape": list(got.shape)}

def stats():
    return [[list(k), v] for k, v in rt.fallback_stats().items()]

def loaded():
    return {"plugins": rt.plugins(), "errors": rt.plugin_errors()}
"""

EPILOGUE = f"""
print({RESULT_MARK!r} + json.dumps(result, default=str))
"""


def run_hwport(code: str, tmp_path: Path, *, plugin_path_entries=None, env=None,
               pythonpath=(), timeout=180) -> dict:
    """Runs PRELUDE + code + EPILOGUE in a fresh interpreter and returns `result`."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("HWPORT_")}
    child_env["HWPORT_PLUGIN_PROBE_TIMEOUT"] = "3"  # hang_init costs this much per run
    if plugin_path_entries is not None:
        child_env["HWPORT_PLUGIN_PATH"] = os.pathsep.join(str(p) for p in plugin_path_entries)
    if pythonpath:
        child_env["PYTHONPATH"] = os.pathsep.join(
            [str(p) for p in pythonpath] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    child_env.update(env or {})
    script = PRELUDE + textwrap.dedent(code) + EPILOGUE
    # cwd: a scratch folder, so that the source tree's hwport/ does not shadow the installed one.
    workdir = tmp_path / "cwd"
    workdir.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", script], env=child_env, cwd=workdir,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"child interpreter failed (rc={proc.returncode})\n--- stdout\n{proc.stdout}\n"
        f"--- stderr\n{proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    assert lines, f"no result printed\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    out = json.loads(lines[-1][len(RESULT_MARK):])
    out["_stderr"] = proc.stderr
    return out


def same_path(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def plugin_entry(info: dict, device_type: str) -> dict:
    found = [p for p in info["plugins"] if p["device_type"] == device_type]
    assert len(found) == 1, (f"expected one plugin {device_type!r}, got "
                             f"{[p['device_type'] for p in info['plugins']]}; "
                             f"errors: {info['errors']}")
    return found[0]


def errors_for(info: dict, path) -> list[dict]:
    return [e for e in info["errors"] if same_path(e["path"], path)]


def assert_numbers(res: dict, what: str = ""):
    assert res["dtype"] == "float32", (what, res["dtype"])
    got, want = np.asarray(res["got"]), np.asarray(res["want"])
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)


def fallback_count(stat_list, device_type: str, ops=MULTIPLY_NAMES, dtype="float32") -> int:
    return sum(v for (op, dev, dt), v in stat_list if op in ops and dev == device_type
               and dt == dtype)


# ---- broken plugins are skipped; the host keeps working ---------------------------------------

WORKLOAD_ON_GOOD = """
result["info"] = loaded()
result["cpu_add"] = binop("add", "cpu")
result["good_add"] = binop("add", "custom:test_good")
result["good_add_1"] = binop("add", "custom:test_good:1")
before = stats()
result["good_mul"] = binop("multiply", "custom:test_good")
result["stats_before"] = before
result["stats_after"] = stats()
"""


def check_good_workload(res: dict):
    assert_numbers(res["cpu_add"], "add on cpu")
    assert_numbers(res["good_add"], "add on custom:test_good")
    assert_numbers(res["good_add_1"], "add on custom:test_good:1")
    assert_numbers(res["good_mul"], "multiply on custom:test_good (CPU fallback)")
    assert (fallback_count(res["stats_after"], "test_good")
            == fallback_count(res["stats_before"], "test_good") + 1), res["stats_after"]


@pytest.mark.parametrize("variant", sorted(BAD_VARIANTS))
def test_bad_plugin_is_skipped_with_reason(variant, tmp_path):
    bad, good = plugin_path(variant), plugin_path("good")
    res = run_hwport(WORKLOAD_ON_GOOD, tmp_path, plugin_path_entries=[bad, good])
    info = res["info"]

    errs = errors_for(info, bad)
    assert len(errs) == 1, f"expected one error for {bad}, got {info['errors']}"
    for needle in BAD_VARIANTS[variant]:
        assert needle in errs[0]["reason"], (needle, errs[0]["reason"])

    assert not errors_for(info, good), info["errors"]
    types = [p["device_type"] for p in info["plugins"]]
    assert "cpu" in types and "test_good" in types, info
    assert f"test_{variant}" not in types and "Bad Type!" not in types, types
    assert not any(same_path(p["path"], bad) for p in info["plugins"] if p.get("path")), info
    check_good_workload(res)


@pytest.mark.parametrize("variant", sorted(UNPROBED_VARIANTS))
def test_garbage_pointers_are_reasons_without_the_probe(variant, tmp_path):
    bad, good = plugin_path(variant), plugin_path("good")
    res = run_hwport(WORKLOAD_ON_GOOD, tmp_path, plugin_path_entries=[bad, good],
                     env={"HWPORT_PLUGIN_PROBE": "0"})
    errs = errors_for(res["info"], bad)
    assert len(errs) == 1, res["info"]["errors"]
    for needle in UNPROBED_VARIANTS[variant]:
        assert needle in errs[0]["reason"], (needle, errs[0]["reason"])
    assert "probe" not in errs[0]["reason"], errs[0]["reason"]
    assert f"test_{variant}" not in [p["device_type"] for p in res["info"]["plugins"]]
    check_good_workload(res)


@pytest.mark.parametrize("probe", ["1", "0"])
def test_non_regular_files_are_never_opened(probe, tmp_path):
    """A FIFO blocks whoever opens it until a writer comes: it (and a socket, a directory
    named *.so) is rejected from its stat() before anything opens it, listed on its own or
    found in a folder, with or without the probe. The subprocess timeout only turns a hang
    into a failure."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    fifo = tmp_path / "libhwport_fifo.so"
    os.mkfifo(fifo)
    os.mkfifo(folder / "libhwport_fifo_in_folder.so")
    (folder / "libhwport_dir.so").mkdir()
    shutil.copy2(plugin_path("good"), folder / plugin_path("good").name)
    res = run_hwport(WORKLOAD_ON_GOOD, tmp_path, plugin_path_entries=[fifo, folder],
                     env={"HWPORT_PLUGIN_PROBE": probe}, timeout=120)
    info = res["info"]
    expected = {fifo: "a FIFO", folder / "libhwport_fifo_in_folder.so": "a FIFO",
                folder / "libhwport_dir.so": "a directory"}
    for path, kind in expected.items():
        errs = errors_for(info, path)
        assert len(errs) == 1, (path, info["errors"])
        assert f"not a regular file ({kind}); not opened" in errs[0]["reason"], errs[0]
    assert len(info["errors"]) == len(expected), info["errors"]
    check_good_workload(res)


def test_probe_decides_by_its_report_when_sigchld_is_ignored(tmp_path):
    """With SIGCHLD ignored the probe's exit status cannot be collected (it is reaped on exit):
    its report alone decides, so an exit in init is still caught and a good plugin loads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWPORT_")}
    bad, good = plugin_path("exit3_init"), plugin_path("good")
    env["HWPORT_PLUGIN_PATH"] = os.pathsep.join([str(bad), str(good)])
    code = textwrap.dedent("""
        import json, signal
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        import hwport
        print(json.dumps({"types": [p["device_type"] for p in hwport.runtime.plugins()],
                          "errors": hwport.runtime.plugin_errors()}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    info = json.loads(proc.stdout.splitlines()[-1])
    assert "test_good" in info["types"] and "test_exit3_init" not in info["types"], info
    errs = errors_for(info, bad)
    assert len(errs) == 1, info["errors"]
    assert "during hwport_plugin_init" in errs[0]["reason"], errs[0]
    assert "exit status could not be collected" in errs[0]["reason"], errs[0]


# ---- the probe's own report -------------------------------------------------------------------

PROBE_EXE = INSTALL_ROOT / "runtime" / "hwport_probe"
PROBE_OK_EXIT = 86  # runtime/src/probe_protocol.h

# variant -> (exit status, the probe's last record): where each loading case ends the probe
PROBE_ENDS = {
    "good": (PROBE_OK_EXIT, "done"),
    "missing_entry": (PROBE_OK_EXIT, "done"),  # the host reports it (no crash to isolate)
    "init_error": (PROBE_OK_EXIT, "done"),
    "exit_constructor": (0, "stage load"),
    "exit0_init": (0, "stage init"),
    "exit3_init": (3, "stage init"),
    "crash_init": (-signal.SIGSEGV, "stage init"),
    "garbage_device_type": (-signal.SIGSEGV, "stage device_type"),
    "garbage_last_error": (-signal.SIGSEGV, "stage get_last_error"),
}


@pytest.mark.parametrize("variant", sorted(PROBE_ENDS))
def test_probe_reports_where_it_ended(variant):
    """hwport_probe run by hand with a pipe on fd 3: its stage records and exit status are what
    the host turns into reasons above (success is 'done' plus exit 86, never a bare exit 0)."""
    read_fd, write_fd = os.pipe()
    # A small launcher puts the pipe on fd 3 and execs the probe (its signal is our status).
    launch = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.execv(sys.argv[2], sys.argv[2:])"
    proc = subprocess.run([sys.executable, "-c", launch, str(write_fd), str(PROBE_EXE),
                           str(plugin_path(variant))], pass_fds=(write_fd,),
                          capture_output=True, timeout=60)
    os.close(write_fd)
    with os.fdopen(read_fd, "r") as report:
        records = report.read().splitlines()
    status, last = PROBE_ENDS[variant]
    assert proc.returncode == status, (proc.returncode, records)
    assert records and records[0] == "stage load", records
    assert records[-1] == last, records
    if variant == "good":  # it ran everything the host runs at load, in the host's order
        stages = [r.split()[1] for r in records if r.startswith("stage ")]
        assert stages[:4] == ["load", "init", "api", "device_type"], stages
        assert {"tables", "get_last_error", "get_device_count", "get_properties"} <= set(stages)


def test_without_the_probe_a_crashing_init_takes_the_process_down(tmp_path):
    """HWPORT_PLUGIN_PROBE=0 skips the isolated probe: then nothing can catch a segfault in
    init. This pins down that the probe is what keeps `import hwport` alive above."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWPORT_")}
    env.update(HWPORT_PLUGIN_PATH=str(plugin_path("crash_init")), HWPORT_PLUGIN_PROBE="0")
    proc = subprocess.run([sys.executable, "-c", "import hwport"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stderr)


def test_whole_zoo_folder(tmp_path):
    """The installed zoo folder on HWPORT_PLUGIN_PATH: every bad variant is skipped with its
    own reason, every good one loads and computes, all in one process."""
    folder = plugin_path("good").parent
    res = run_hwport("""
        result["info"] = loaded()
        for t in ("test_good", "test_newer_minor", "test_older_minor"):
            result[t] = binop("add", "custom:" + t)
            result[t + "_bcast"] = binop("add", "custom:" + t + ":1", A, ROW)
    """, tmp_path, plugin_path_entries=[folder])
    info = res["info"]
    for variant, needles in BAD_VARIANTS.items():
        errs = errors_for(info, plugin_path(variant))
        assert len(errs) == 1, (variant, info["errors"])
        for needle in needles:
            assert needle in errs[0]["reason"], (variant, needle, errs[0]["reason"])
    for variant in GOOD_VARIANTS:
        entry = plugin_entry(info, f"test_{variant}")
        assert same_path(entry["path"], plugin_path(variant)), entry
        assert not errors_for(info, plugin_path(variant)), info["errors"]
        assert_numbers(res[f"test_{variant}"], variant)
        assert_numbers(res[f"test_{variant}_bcast"], variant + " broadcast")


# ---- the good plugin: metadata, kernel, broadcasting, fallback --------------------------------

def test_good_plugin_metadata_and_kernel(tmp_path):
    good = plugin_path("good")
    res = run_hwport("""
        result["info"] = loaded()
        result["add"] = binop("add", "custom:test_good")
        result["add_row"] = binop("add", "custom:test_good", A, ROW)    # stride-0 input
        result["add_col_row"] = binop("add", "custom:test_good:1", COL, ROW)
        result["add_scalarish"] = binop("add", "custom:test_good", A, np.float32([2.5]))
        result["stats"] = stats()
    """, tmp_path, plugin_path_entries=[good])
    entry = plugin_entry(res["info"], "test_good")
    assert same_path(entry["path"], good)
    assert entry["abi_version"] == f"1.{MINOR}"
    assert entry["plugin_version"] == "1.0.0"
    assert entry["device_count"] == 2
    assert entry["num_kernels"] == 1
    assert entry["has_streams"] is False
    assert set(entry) >= {"device_type", "path", "abi_version", "plugin_version", "device_count",
                          "num_kernels", "has_streams"}
    cpu = plugin_entry(res["info"], "cpu")
    assert cpu["device_count"] >= 1
    for key in ("add", "add_row", "add_col_row", "add_scalarish"):
        assert_numbers(res[key], key)
    assert res["add_col_row"]["shape"] == [2, 3]
    # add has a kernel on test_good: nothing fell back.
    assert fallback_count(res["stats"], "test_good", ops=("add",)) == 0, res["stats"]


def test_fallback_is_counted(tmp_path):
    res = run_hwport("""
        before = stats()
        result["mul1"] = binop("multiply", "custom:test_good")
        result["mul2"] = binop("multiply", "custom:test_good:1", A, ROW)
        result["add"] = binop("add", "custom:test_good")
        result["cpu_mul"] = binop("multiply", "cpu")
        result["before"] = before
        result["after"] = stats()
    """, tmp_path, plugin_path_entries=[plugin_path("good")])
    for key in ("mul1", "mul2", "add", "cpu_mul"):
        assert_numbers(res[key], key)
    assert fallback_count(res["before"], "test_good") == 0, res["before"]
    assert fallback_count(res["after"], "test_good") == 2, res["after"]
    assert fallback_count(res["after"], "test_good", ops=("add",)) == 0, res["after"]
    assert fallback_count(res["after"], "cpu", ops=(*MULTIPLY_NAMES, "add")) == 0, res["after"]
    for (op, dev, dtype), count in res["after"]:
        assert isinstance(op, str) and isinstance(dev, str) and isinstance(dtype, str)
        assert isinstance(count, int) and count > 0


def test_fallback_error_mode(tmp_path):
    res = run_hwport("""
        result["add"] = binop("add", "custom:test_good")   # has a kernel: no fallback needed
        try:
            binop("multiply", "custom:test_good")
            result["raised"] = None
        except hwport.FallbackError as e:
            result["raised"] = "FallbackError"
            result["message"] = str(e)
        except Exception as e:
            result["raised"] = type(e).__name__ + ": " + str(e)
        result["cpu_mul"] = binop("multiply", "cpu")        # the CPU itself is no fallback
        result["is_exception"] = issubclass(hwport.FallbackError, Exception)
    """, tmp_path, plugin_path_entries=[plugin_path("good")], env={"HWPORT_FALLBACK": "error"})
    assert_numbers(res["add"], "add with HWPORT_FALLBACK=error")
    assert res["raised"] == "FallbackError", res["raised"]
    assert res["is_exception"]
    message = res["message"]
    assert any(name in message for name in MULTIPLY_NAMES), message
    assert "test_good" in message, message
    assert_numbers(res["cpu_mul"], "multiply on cpu")


# ---- version negotiation ----------------------------------------------------------------------

MINOR_WORKLOAD = """
result["info"] = loaded()
result["add"] = binop("add", "custom:{t}")
result["add_1"] = binop("add", "custom:{t}:1", COL, ROW)
result["mul"] = binop("multiply", "custom:{t}")      # CPU fallback: copies through the plugin
result["stats"] = stats()
"""


def test_newer_minor_plugin_loads_and_works(tmp_path):
    path = plugin_path("newer_minor")
    res = run_hwport(MINOR_WORKLOAD.format(t="test_newer_minor"), tmp_path,
                     plugin_path_entries=[path])
    info = res["info"]
    assert not errors_for(info, path), info["errors"]
    entry = plugin_entry(info, "test_newer_minor")
    assert entry["abi_version"] == f"1.{MINOR + 1}"
    # The plugin looked for a next-minor host field only as far as host->struct_size allowed.
    assert "host extension: absent" in entry["plugin_version"], entry
    assert entry["device_count"] == 2 and entry["num_kernels"] == 1
    assert entry["has_streams"] is False
    for key in ("add", "add_1", "mul"):
        assert_numbers(res[key], key)
    assert fallback_count(res["stats"], "test_newer_minor") == 1, res["stats"]


def test_older_minor_plugin_loads_and_works(tmp_path):
    path = plugin_path("older_minor")
    res = run_hwport(MINOR_WORKLOAD.format(t="test_older_minor"), tmp_path,
                     plugin_path_entries=[path])
    info = res["info"]
    assert not errors_for(info, path), info["errors"]
    entry = plugin_entry(info, "test_older_minor")
    assert entry["abi_version"] == "1.0"
    assert entry["device_count"] == 2 and entry["num_kernels"] == 1
    # Its stream pointer lies beyond HWP_PluginApi.struct_size: it must be treated as NULL.
    assert entry["has_streams"] is False
    for key in ("add", "add_1", "mul"):
        assert_numbers(res[key], key)
    # The trap pointers beyond each struct_size abort the process if used (also at shutdown,
    # which is why the child must have exited cleanly).
    assert "beyond the declared struct_size" not in res["_stderr"], res["_stderr"]


# ---- discovery --------------------------------------------------------------------------------

def test_folder_in_plugin_path(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    copy = folder / plugin_path("good").name
    shutil.copy2(plugin_path("good"), copy)
    (folder / "README.txt").write_text("not a plugin\n")
    res = run_hwport("""
        result["info"] = loaded()
        result["add"] = binop("add", "custom:test_good")
    """, tmp_path, plugin_path_entries=[folder])
    info = res["info"]
    entry = plugin_entry(info, "test_good")
    assert same_path(entry["path"], copy), entry
    assert not any("README" in e["path"] for e in info["errors"]), info["errors"]
    assert_numbers(res["add"], "add on a plugin found in a folder")


def test_nonexistent_path_gives_a_reason(tmp_path):
    missing = tmp_path / "nowhere" / "libhwport_does_not_exist.so"
    res = run_hwport("""
        result["info"] = loaded()
        result["add"] = binop("add", "custom:test_good")
    """, tmp_path, plugin_path_entries=[missing, plugin_path("good")])
    info = res["info"]
    errs = [e for e in info["errors"] if "libhwport_does_not_exist" in e["path"]]
    assert len(errs) == 1, info["errors"]
    assert errs[0]["reason"].strip(), errs[0]
    plugin_entry(info, "test_good")
    assert_numbers(res["add"], "add on test_good next to a missing path")


def make_entry_point(tmp_path: Path, function_body: str, name: str = "test_good") -> Path:
    """A folder holding a module and a dist-info that declares it in group hwport.plugins."""
    site = tmp_path / "ep_site"
    site.mkdir(exist_ok=True)
    module = f"hwport_test_ep_{name}"
    (site / f"{module}.py").write_text(
        "def plugin_path():\n" + textwrap.indent(textwrap.dedent(function_body), "    "))
    dist = site / f"hwport_test_ep_{name}-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: hwport-test-ep-{name.replace('_', '-')}\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text(f"[hwport.plugins]\n{name} = {module}:plugin_path\n")
    return site


def test_entry_point_is_discovered(tmp_path):
    good = plugin_path("good")
    site = make_entry_point(tmp_path, f"return {str(good)!r}\n")
    res = run_hwport("""
        from importlib.metadata import entry_points
        result["declared"] = [ep.name for ep in entry_points(group="hwport.plugins")]
        result["info"] = loaded()
        result["add"] = binop("add", "custom:test_good")
    """, tmp_path, pythonpath=[site])
    assert "test_good" in res["declared"], res["declared"]
    entry = plugin_entry(res["info"], "test_good")
    assert same_path(entry["path"], good), entry
    assert not errors_for(res["info"], good), res["info"]["errors"]
    assert_numbers(res["add"], "add on a plugin from an entry point")


def test_entry_point_that_raises_does_not_break_import(tmp_path):
    site = make_entry_point(tmp_path, "raise RuntimeError('entry point exploded')\n",
                            name="broken_ep")
    res = run_hwport("""
        result["info"] = loaded()
        result["add"] = binop("add", "custom:test_good")
    """, tmp_path, pythonpath=[site], plugin_path_entries=[plugin_path("good")])
    info = res["info"]
    plugin_entry(info, "test_good")
    assert_numbers(res["add"], "add on test_good next to a broken entry point")
    assert any(re.search(r"broken_ep|hwport_test_ep_broken_ep|entry point exploded",
                         e["path"] + " " + e["reason"]) for e in info["errors"]), info["errors"]


def test_disable_plugins_leaves_only_cpu(tmp_path):
    site = make_entry_point(tmp_path, f"return {str(plugin_path('newer_minor'))!r}\n",
                            name="test_newer_minor")
    res = run_hwport("""
        result["info"] = loaded()
        result["cpu_add"] = binop("add", "cpu")
        try:
            binop("add", "custom:test_good")
            result["custom"] = "worked"
        except Exception as e:
            result["custom"] = type(e).__name__
    """, tmp_path, plugin_path_entries=[plugin_path("good")], pythonpath=[site],
        env={"HWPORT_DISABLE_PLUGINS": "1"})
    info = res["info"]
    assert [p["device_type"] for p in info["plugins"]] == ["cpu"], info
    assert info["errors"] == [], info["errors"]
    assert_numbers(res["cpu_add"], "add on cpu with plugins disabled")
    assert res["custom"] != "worked", "custom:test_good must not exist with plugins disabled"


# ---- the zoo itself, with a stand-alone C host (no hwport runtime involved) -------------------

ZOO_CHECK_SRC = REPO_ROOT / "tests" / "plugins" / "zoo_host_check.c"

# variant -> facts zoo_host_check must print (key=value lines)
ZOO_FACTS = {
    "good": {"entry": "present", "init_status": "0", "abi": f"1.{MINOR}",
             "device_type": "test_good", "plugin_version": "1.0.0", "num_kernels": "1",
             "stream": "no",
             "device_count": "2", "api_struct_size": "96", "exercise": "ok"},
    "missing_entry": {"entry": "missing"},
    "wrong_major": {"init_status": "0", "abi": f"2.{MINOR}", "device_type": "test_wrong_major"},
    "newer_minor": {"init_status": "0", "abi": f"1.{MINOR + 1}", "api_struct_size": "104",
                    "memory_table_size": "144", "device_type": "test_newer_minor",
                    "plugin_version": "next minor (host extension: absent)", "exercise": "ok"},
    "older_minor": {"init_status": "0", "abi": "1.0", "api_struct_size": "56",
                    "device_table_size": "24", "memory_table_size": "48", "stream": "no",
                    "device_type": "test_older_minor", "exercise": "ok"},
    "short_struct": {"init_status": "0", "api_struct_size": "16", "abi": f"1.{MINOR}"},
    "short_table": {"init_status": "0", "memory_table_size": "40",
                    "device_type": "test_short_table"},
    "missing_required": {"init_status": "0", "copy_d2d": "null",
                         "device_type": "test_missing_required"},
    "init_error": {"init_status": "6", "api": "set", "last_error": "simulated driver failure"},
    "null_api": {"init_status": "0", "api": "null"},
    "bad_device_type": {"init_status": "0", "device_type": "Bad Type!", "exercise": "ok"},
}


@pytest.fixture(scope="module")
def zoo_host_check(tmp_path_factory):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    exe = tmp_path_factory.mktemp("zoo") / "zoo_host_check"
    r = subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                        f"-I{ABI_INCLUDE_DIR}", str(ZOO_CHECK_SRC), "-o", str(exe), "-ldl"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


def run_zoo_check(exe, variant, *args):
    proc = subprocess.run([str(exe), str(plugin_path(variant)), *args], capture_output=True,
                          text=True, timeout=60)
    facts = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.setdefault(key, value)
    return proc, facts


@pytest.mark.parametrize("variant", sorted(ZOO_FACTS))
def test_zoo_variant_is_what_it_claims(zoo_host_check, variant):
    proc, facts = run_zoo_check(zoo_host_check, variant)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    for key, value in ZOO_FACTS[variant].items():
        assert facts.get(key) == value, (key, value, proc.stdout)
    if variant not in ("missing_entry",):
        # Every variant that runs init registers its one kernel (the host must drop the
        # kernels of a plugin it then rejects).
        assert "kernel=add:8:flags=1" in proc.stdout, proc.stdout


def test_zoo_newer_minor_uses_newer_host_field_when_present(zoo_host_check):
    proc, facts = run_zoo_check(zoo_host_check, "newer_minor", "--host-next-minor")
    assert proc.returncode == 0, proc.stdout
    assert facts["plugin_version"] == "next minor (host extension: used)", proc.stdout


def test_zoo_older_minor_traps_a_host_that_ignores_struct_size(zoo_host_check):
    proc, _ = run_zoo_check(zoo_host_check, "older_minor", "--ignore-struct-size")
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stdout, proc.stderr)
    assert "HWP_DeviceTable.get_properties" in proc.stderr, proc.stderr


@pytest.mark.parametrize("variant", sorted({*ZOO_FACTS, *PROBE_ENDS}))
def test_zoo_exports_one_symbol(variant):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on PATH")
    out = subprocess.run([nm, "-D", "--defined-only", str(plugin_path(variant))],
                         capture_output=True, text=True, check=True).stdout
    symbols = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    expected = ["hwport_plugin_init_renamed"] if variant == "missing_entry" else [
        "hwport_plugin_init"]
    assert symbols == expected, symbols
