"""Build step: writes the C source of _hwport_pyembed, the library that embeds the Python
interpreter (cffi's embedding API) for Python plugins.

    python embed_build.py <abi include dir> <output .c>

Its one entry, hwport_pyplugin_init, is called by a plugin's entry library (shim.c). When the
process has no interpreter yet (the host's isolated probe, a C++ host) cffi starts one; in a
Python process it uses the running one. The cffi declarations are the ABI headers' own
(conformance/abi_ffi.py preprocesses them), so the ffi that the plugin runtime uses knows every
ABI type.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import cffi

ENTRY = ("HWP_Status hwport_pyplugin_init(const char *payload, const HWP_HostApi *host, "
         "const HWP_PluginApi **out, char *error, size_t error_size);")

# Runs once, in the interpreter, at the first call. Everything else lives in tables.py.
INIT_CODE = r'''
from _hwport_pyembed import ffi, lib


@ffi.def_extern(error=8)  # HWP_ERROR_INTERNAL when even the handler below failed
def hwport_pyplugin_init(payload, host, out, error, error_size):
    try:
        import json
        config = json.loads(ffi.string(payload).decode("utf-8"))
        _prepare_imports(config)
        from hwport.device_plugins.python import tables
        return tables.init(ffi, lib, config, host, out, error, error_size)
    except BaseException as exc:  # nothing may cross the C ABI
        text = ("Python plugin runtime: %s: %s" % (type(exc).__name__, exc)).encode()
        n = min(len(text), error_size - 1)
        ffi.memmove(error, text[:n], n)
        error[n] = b"\0"
        return 8


def _prepare_imports(config):
    """An interpreter started here (the probe, a C++ host) sees the site folders of the
    process that prepared the plugin, and imports hwport's subpackages without running
    hwport/__init__.py, which would load every plugin again inside this load."""
    import importlib.util
    import site
    import sys
    import types
    for folder in config.get("site_dirs", []):
        if folder not in sys.path:
            site.addsitedir(folder)
    for folder in config.get("sys_path", []):
        if folder not in sys.path:
            sys.path.append(folder)
    if "hwport" not in sys.modules:
        spec = importlib.util.find_spec("hwport")
        if spec is not None and spec.submodule_search_locations is not None:
            stub = types.ModuleType("hwport")
            stub.__path__ = list(spec.submodule_search_locations)
            stub.__spec__ = spec
            sys.modules["hwport"] = stub
'''


# Loaded with RTLD_LOCAL (as the shim and every host load plugins), the libpython this library
# links would stay invisible to the extension modules the interpreter imports (_cffi_backend,
# numpy: they do not link libpython, they expect its symbols in the global scope). Where this
# library brought libpython into the process (the probe, a C++ host), it promotes it to global.
PROMOTE_LIBPYTHON = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <Python.h>
#include <hwport/hwport.h>

__attribute__((constructor)) static void hwport_promote_libpython(void) {
  Dl_info info;
  if (dladdr((void *)&Py_IsInitialized, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
}
"""


def _abi_ffi():
    """conformance/abi_ffi.py by path: the build has no importable hwport package yet."""
    path = Path(__file__).resolve().parents[2] / "conformance" / "abi_ffi.py"
    spec = importlib.util.spec_from_file_location("_hwport_build_abi_ffi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(include_dir: str, out_c: str) -> None:
    decls, defines = _abi_ffi().preprocess_headers(include_dir)
    builder = cffi.FFI()
    builder.cdef(decls)
    builder.cdef(defines)
    builder.embedding_api(ENTRY)
    builder.set_source("_hwport_pyembed", PROMOTE_LIBPYTHON, libraries=["dl"])
    builder.embedding_init_code(INIT_CODE)
    tmp = Path(out_c).with_suffix(".tmp.c")
    builder.emit_c_code(str(tmp))
    data = tmp.read_bytes()
    out = Path(out_c)
    if not out.exists() or out.read_bytes() != data:  # unchanged: no rebuild
        out.write_bytes(data)
    tmp.unlink()


if __name__ == "__main__":
    main(*sys.argv[1:3])
