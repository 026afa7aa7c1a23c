"""The C ABI headers: self-contained, strict C99 and C++, and pinned by the layout golden test.

Compiles with the system `cc` / `c++` (skipped when absent). The golden file
tests/abi/abi_layout_golden.cpp pins sizes, offsets, field types and constant values; the
negative tests patch a temporary copy of the headers and show that the golden file then fails
to compile, for the right reason.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ABI_INCLUDE_DIR = REPO_ROOT / "runtime" / "include"
HEADER_DIR = ABI_INCLUDE_DIR / "hwport"
ABI_TEST_DIR = REPO_ROOT / "tests" / "abi"
GOLDEN = ABI_TEST_DIR / "abi_layout_golden.cpp"
C99_CHECK = ABI_TEST_DIR / "abi_c99_check.c"

HEADERS = ["types.h", "device.h", "kernel.h", "kernel_util.h", "plugin.h", "ccl.h",
           "codegen.h", "profiler.h", "ops.h", "hwport.h"]

C_FLAGS = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]
CXX_FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic"]
# What a careful vendor may build with; the headers must not be the reason it fails.
C_STRICT = ["-Wstrict-prototypes", "-Wmissing-prototypes", "-Wshadow", "-Wconversion",
            "-Wsign-conversion", "-Wcast-qual", "-Wundef", "-Wold-style-definition"]
CXX_STRICT = ["-Wshadow", "-Wconversion", "-Wsign-conversion", "-Wold-style-cast",
              "-Wzero-as-null-pointer-constant", "-Wundef"]

CC = shutil.which("cc")
CXX = shutil.which("c++")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler (c++) on PATH")
lp64_only = pytest.mark.skipif(struct.calcsize("P") != 8,
                               reason="the golden numbers are for 64-bit targets")


def _load_golden_parser():
    spec = importlib.util.spec_from_file_location("gen_abi_golden",
                                                  ABI_TEST_DIR / "gen_abi_golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_source(compiler: str, flags: list[str], source: Path, include_dir: Path,
                   tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [compiler, *flags, f"-I{include_dir}", "-c", str(source), "-o", str(tmp_path / "out.o")],
        capture_output=True, text=True, timeout=120)


def assert_compiles(compiler, flags, source, tmp_path, include_dir=ABI_INCLUDE_DIR):
    r = compile_source(compiler, flags, source, include_dir, tmp_path)
    assert r.returncode == 0, f"{' '.join(r.args)} failed:\n{r.stderr}"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- every header alone (self-contained, include guards), and all together -----------------

@needs_cc
@pytest.mark.parametrize("header", HEADERS)
def test_header_alone_is_strict_c99(header, tmp_path):
    src = write(tmp_path, "t.c", f'#include "hwport/{header}"\n#include "hwport/{header}"\n'
                                 "int hwp_test_dummy;\n")
    assert_compiles(CC, C_FLAGS, src, tmp_path)


@needs_cxx
@pytest.mark.parametrize("header", HEADERS)
def test_header_alone_is_strict_cxx17(header, tmp_path):
    src = write(tmp_path, "t.cpp", f'#include "hwport/{header}"\n#include "hwport/{header}"\n'
                                   "int hwp_test_dummy;\n")
    assert_compiles(CXX, CXX_FLAGS, src, tmp_path)


ALL_HEADERS = "".join(f'#include "hwport/{h}"\n' for h in HEADERS)
ALL_HEADERS_REVERSED = "".join(f'#include "hwport/{h}"\n' for h in reversed(HEADERS))


@needs_cc
def test_all_headers_c99_with_strict_warnings(tmp_path):
    src = write(tmp_path, "t.c", ALL_HEADERS + ALL_HEADERS_REVERSED + "int hwp_test_dummy;\n")
    assert_compiles(CC, C_FLAGS, src, tmp_path)
    assert_compiles(CC, C_FLAGS + C_STRICT, src, tmp_path)


@needs_cxx
def test_all_headers_cxx17_with_strict_warnings(tmp_path):
    src = write(tmp_path, "t.cpp", ALL_HEADERS_REVERSED + ALL_HEADERS + "int hwp_test_dummy;\n")
    assert_compiles(CXX, CXX_FLAGS, src, tmp_path)
    assert_compiles(CXX, CXX_FLAGS + CXX_STRICT, src, tmp_path)


@needs_cxx
def test_cxx_plugin_can_define_the_entry_point(tmp_path):
    # A plugin written in C++ defines the entry point with the header's types; it must match
    # HWP_PluginInitFn exactly and be exported under its unmangled name.
    src = write(tmp_path, "t.cpp", ALL_HEADERS + """
extern "C" HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *, const HWP_PluginApi **);
extern "C" HWP_Status hwport_plugin_init(const HWP_HostApi *h, const HWP_PluginApi **o) {
  (void)h; (void)o; return HWP_OK;
}
HWP_PluginInitFn hwp_test_entry();
HWP_PluginInitFn hwp_test_entry() { return hwport_plugin_init; }
""")
    assert_compiles(CXX, CXX_FLAGS, src, tmp_path)
    nm = shutil.which("nm")
    if nm:
        symbols = subprocess.run([nm, str(tmp_path / "out.o")], capture_output=True, text=True)
        assert re.search(r"\bT hwport_plugin_init$", symbols.stdout, re.M), symbols.stdout


def test_every_header_has_guards_and_extern_c():
    for header in HEADERS:
        text = (HEADER_DIR / header).read_text()
        guard = "HWPORT_" + header[:-2].upper() + "_H"
        assert f"#ifndef {guard}" in text and f"#define {guard}" in text, header
        if header != "hwport.h":  # hwport.h only includes the others
            assert re.search(r'#ifdef __cplusplus\s*\nextern "C" \{', text), header
    on_disk = sorted(p.name for p in HEADER_DIR.glob("*.h"))
    assert on_disk == sorted(HEADERS), "a header was added or removed: update this test"


# ---- the golden layout test ----------------------------------------------------------------

@needs_cxx
@lp64_only
def test_golden_layout_compiles(tmp_path):
    assert_compiles(CXX, CXX_FLAGS, GOLDEN, tmp_path)


@needs_cc
def test_c99_layout_check_compiles(tmp_path):
    assert_compiles(CC, C_FLAGS, C99_CHECK, tmp_path)


def test_every_struct_starts_with_struct_size():
    structs, _, _, _ = _load_golden_parser().load(ABI_INCLUDE_DIR)
    assert structs, "the header parser found no structs"
    for name, fields in structs.items():
        assert fields[0] == ("struct_size", "size_t"), f"{name} must start with size_t struct_size"


def test_golden_covers_every_struct_field_and_constant():
    gen = _load_golden_parser()
    structs, enums, defines, typedefs = gen.load(ABI_INCLUDE_DIR)
    golden = re.sub(r"\s+", " ", GOLDEN.read_text())
    c99 = C99_CHECK.read_text()
    expected_structs = {
        "HWP_TensorView", "HWP_DeviceProperties", "HWP_MemoryStats", "HWP_DeviceTable",
        "HWP_MemoryTable", "HWP_StreamTable", "HWP_KernelContext", "HWP_KernelRegistration",
        "HWP_CclTable", "HWP_CodegenTable", "HWP_ProfilerTable", "HWP_HostApi", "HWP_PluginApi"}
    assert expected_structs <= set(structs), set(structs) ^ expected_structs
    missing = []
    for name, fields in structs.items():
        if f"HWP_GOLDEN_SIZE({name}," not in golden:
            missing.append(f"sizeof({name})")
        if f"sizeof({name}) ==" not in c99:
            missing.append(f"sizeof({name}) in {C99_CHECK.name}")
        for field, _ in fields:
            if f"HWP_GOLDEN_FIELD({name}, {field}," not in golden:
                missing.append(f"{name}.{field}")
    for enum, consts in enums.items():
        for const in consts:
            if f"HWP_GOLDEN_VALUE({const}," not in golden:
                missing.append(f"{enum}.{const}")
    for macro in ("HWP_ABI_VERSION_MAJOR", "HWP_ABI_VERSION_MINOR", "HWP_MAX_NDIM"):
        assert macro in defines
        if f"HWP_GOLDEN_VALUE({macro}," not in golden:
            missing.append(macro)
    assert "HWP_PLUGIN_INIT_SYMBOL" in golden
    for name in typedefs:
        if f"std::is_same<{name}," not in golden:
            missing.append(f"typedef {name}")
    assert not missing, f"not pinned by the golden test: {missing}"


# ---- negative: a changed header makes the golden file fail ----------------------------------

MUTATIONS = {
    # name: (header, old text, new text, what the failing assertion names)
    "append_field": (
        "device.h",
        "(int32_t device, HWP_Buffer buffer);\n} HWP_MemoryTable;",
        "(int32_t device, HWP_Buffer buffer);\n"
        "  HWP_Status (*appended)(int32_t device);\n} HWP_MemoryTable;",
        "HWP_MemoryTable"),
    "reorder_fields": (
        "types.h",
        "  HWP_DType dtype;\n  int32_t ndim;",
        "  int32_t ndim;\n  HWP_DType dtype;",
        "HWP_TensorView"),
    "insert_field_in_middle": (
        "plugin.h",
        "  uint32_t abi_minor;\n  const char *device_type;",
        "  uint32_t abi_minor;\n  uint64_t inserted;\n  const char *device_type;",
        "HWP_PluginApi"),
    "change_parameter_type": (
        "device.h",
        "HWP_Status (*allocate)(int32_t device, uint64_t nbytes, HWP_Buffer *out);",
        "HWP_Status (*allocate)(int32_t device, int64_t nbytes, HWP_Buffer *out);",
        "allocate"),
    "renumber_enum": (
        "types.h",
        "HWP_DTYPE_FLOAT32 = 8,",
        "HWP_DTYPE_FLOAT32 = 11,",
        "HWP_DTYPE_FLOAT32"),
    "bump_major": (
        "types.h",
        "#define HWP_ABI_VERSION_MAJOR 1",
        "#define HWP_ABI_VERSION_MAJOR 2",
        "HWP_ABI_VERSION_MAJOR"),
}


@needs_cc
@needs_cxx
@lp64_only
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_golden_fails_when_a_header_changes(mutation, tmp_path):
    header, old, new, named = MUTATIONS[mutation]
    include = tmp_path / "include"
    shutil.copytree(ABI_INCLUDE_DIR, include)
    path = include / "hwport" / header
    text = path.read_text()
    assert text.count(old) == 1, f"{header} no longer contains the text this mutation patches"
    path.write_text(text.replace(old, new))

    # The patched headers are still valid C and C++ (the failure below is the golden's doing).
    src = write(tmp_path, "t.c", ALL_HEADERS + "int hwp_test_dummy;\n")
    assert_compiles(CC, C_FLAGS, src, tmp_path, include_dir=include)
    assert_compiles(CXX, CXX_FLAGS, write(tmp_path, "t.cpp", src.read_text()), tmp_path,
                    include_dir=include)

    r = compile_source(CXX, CXX_FLAGS, GOLDEN, include, tmp_path)
    assert r.returncode != 0, f"the golden test did not catch mutation {mutation!r}"
    assert re.search(r"static[ _]assert", r.stderr, re.I), r.stderr
    failing = [ln for ln in r.stderr.splitlines() if re.search(r"static[ _]assert", ln, re.I)]
    assert any(named in ln for ln in r.stderr.splitlines()), (
        f"expected a failed assertion naming {named!r}:\n" + "\n".join(failing))


@needs_cc
@lp64_only
def test_c99_check_fails_when_a_struct_grows(tmp_path):
    header, old, new, _ = MUTATIONS["append_field"]
    include = tmp_path / "include"
    shutil.copytree(ABI_INCLUDE_DIR, include)
    path = include / "hwport" / header
    path.write_text(path.read_text().replace(old, new))
    r = compile_source(CC, C_FLAGS, C99_CHECK, include, tmp_path)
    assert r.returncode != 0 and "memory_table" in r.stderr, r.stderr
