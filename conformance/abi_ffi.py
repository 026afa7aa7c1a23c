"""cffi declarations built from the project's own C ABI headers (the headers are the contract).

The headers are run through the C preprocessor (``cc -E -P``) with empty stand-ins for
``<stddef.h>``/``<stdint.h>`` (cffi knows ``size_t``, ``int32_t``, ... natively), and what
pycparser cannot read (``__attribute__((...))``) is stripped. Integer ``#define``s named
``HWP_*`` become cffi constants. ``kernel_util.h`` is left out: it has inline bodies.

    ffi = abi_ffi.make_ffi()
    lib = abi_ffi.load_plugin(ffi, "/path/libhwport_x.so")   # lib.hwport_plugin_init(...)

The headers are the installed ones (``hwport.runtime.include_dir()``, shipped in the wheel next to
this package), or the source tree's ``runtime/include`` when that is where they are found.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import cffi


def abi_include_dir() -> Path:
    """Where the C ABI headers are: the installed package's, else the source tree's."""
    try:
        from hwport.runtime import include_dir

        installed = include_dir()
        if (installed / "hwport" / "plugin.h").is_file():
            return installed
    except ImportError:  # the runtime core is not built: fall back to the source tree
        pass
    return Path(__file__).resolve().parents[1] / "runtime" / "include"

DEFAULT_HEADERS = ("hwport/types.h", "hwport/device.h", "hwport/kernel.h", "hwport/plugin.h")

INIT_DECL = "HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);"


def _compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    raise RuntimeError("no C compiler (cc/gcc/clang) found to preprocess the ABI headers")


def _strip_attributes(text: str) -> str:
    """Removes every ``__attribute__((...))`` (balanced parentheses)."""
    out, i = [], 0
    while True:
        j = text.find("__attribute__", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.index("(", j)
        depth = 0
        while True:
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


@functools.cache
def preprocess_headers(
    include_dir: str | os.PathLike | None = None, headers: tuple[str, ...] = DEFAULT_HEADERS
) -> tuple[str, str]:
    """Returns (declarations, integer #defines) as cffi-ready cdef text."""
    include_dir = include_dir or abi_include_dir()
    cc = _compiler()
    with tempfile.TemporaryDirectory(prefix="hwport_abi_ffi_") as tmp:
        tmp_path = Path(tmp)
        fake = tmp_path / "fake_libc"
        fake.mkdir()
        (fake / "stddef.h").write_text("")
        (fake / "stdint.h").write_text("")
        main = tmp_path / "abi.c"
        main.write_text("".join(f'#include "{h}"\n' for h in headers))
        args = [cc, "-nostdinc", f"-I{fake}", f"-I{include_dir}", str(main)]
        decls = subprocess.run(
            [*args[:1], "-E", "-P", *args[1:]], check=True, capture_output=True, text=True
        ).stdout
        macros = subprocess.run(
            [*args[:1], "-E", "-dM", *args[1:]], check=True, capture_output=True, text=True
        ).stdout
    decls = _strip_attributes(decls)
    defines = []
    for line in macros.splitlines():
        m = re.fullmatch(r"#define (HWP_\w+) (-?\d+)[uU]?[lL]*", line.strip())
        if m:
            defines.append(f"#define {m.group(1)} {m.group(2)}")
    return decls, "\n".join(sorted(defines)) + "\n"


def constants(include_dir: str | os.PathLike | None = None) -> dict[str, int]:
    """The headers' integer ``HWP_*`` #defines (e.g. HWP_ABI_VERSION_MAJOR)."""
    _, defines = preprocess_headers(str(include_dir or abi_include_dir()))
    return {name: int(value) for _, name, value in
            (line.split() for line in defines.splitlines() if line)}


def make_ffi(include_dir: str | os.PathLike | None = None) -> cffi.FFI:
    """An FFI that knows every ABI type, enum, HWP_* integer constant and hwport_plugin_init."""
    decls, defines = preprocess_headers(str(include_dir or abi_include_dir()))
    ffi = cffi.FFI()
    ffi.cdef(decls)
    ffi.cdef(defines)
    ffi.cdef(INIT_DECL)
    return ffi


def load_plugin(ffi: cffi.FFI, path: str | os.PathLike):
    """dlopen()s a plugin library (RTLD_NOW | RTLD_LOCAL, as the host does)."""
    return ffi.dlopen(str(path), ffi.RTLD_NOW | ffi.RTLD_LOCAL)
