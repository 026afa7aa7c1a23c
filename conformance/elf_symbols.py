"""What the abi suite reads from a plugin file without loading it into hwcheck: the symbols its
ELF dynamic symbol table (.dynsym) exports (pure Python, so hwcheck needs no binutils on a
vendor's machine), and the symbols the system's dynamic loader cannot resolve when the plugin
is bound in a process of its own (under-linking: a library that calls expf without depending
on libm loads in Python, which already has libm, and fails with RTLD_NOW anywhere else)."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

SHT_DYNSYM = 11
PT_INTERP = 3
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
STT_SECTION, STT_FILE = 3, 4
STV_DEFAULT, STV_PROTECTED = 0, 3
SHN_UNDEF, SHN_ABS = 0, 0xFFF1
# Defined by the linker in every shared object, not by the plugin's code.
LINKER_SYMBOLS = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__gmon_start__",
                            "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_", "__dso_handle"})


class NotElf(ValueError):
    pass


class _Elf:
    """The headers of an ELF file (32/64-bit, either byte order)."""

    def __init__(self, path: str | Path):
        self.data = data = Path(path).read_bytes()
        if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise NotElf(f"{path} is not an ELF file")
        self.is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
        if self.is64:
            phoff, shoff = struct.unpack_from(end + "QQ", data, 0x20)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 0x36)
            sh_fmt, self.sym_fmt, ph_fmt = end + "IIQQQQIIQQ", end + "IBBHQQ", end + "IIQQQQQQ"
        else:
            phoff, shoff = struct.unpack_from(end + "II", data, 0x1C)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 0x2A)
            sh_fmt, self.sym_fmt, ph_fmt = end + "IIIIIIIIII", end + "IIIBBH", end + "IIIIIIII"
        self.sections = [struct.unpack_from(sh_fmt, data, shoff + i * shentsize)
                         for i in range(shnum)]
        self.segments = [struct.unpack_from(ph_fmt, data, phoff + i * phentsize)
                         for i in range(phnum)]

    def cstring(self, at: int) -> str:
        return self.data[at:self.data.index(b"\0", at)].decode("utf-8", "replace")


def exported_symbols(path: str | Path) -> list[str]:
    """Defined global, weak or unique symbols of default or protected visibility (what another
    library can bind to), sorted, without the linker's own (LINKER_SYMBOLS) and version nodes.
    NotElf when the file has no .dynsym to read (not ELF, or its section headers stripped)."""
    elf = _Elf(path)
    names: set[str] = set()
    dynsyms = [sh for sh in elf.sections if sh[1] == SHT_DYNSYM]
    if not dynsyms:
        raise NotElf(f"{path} has no .dynsym section header to read")
    for sh in dynsyms:
        offset, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
        strtab = elf.sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            if elf.is64:
                name, info, other, shndx, value, _ = struct.unpack_from(elf.sym_fmt, elf.data, at)
            else:
                name, value, _, info, other, shndx = struct.unpack_from(elf.sym_fmt, elf.data, at)
            if (shndx == SHN_UNDEF or info >> 4 not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE)
                    or info & 0xF in (STT_SECTION, STT_FILE)
                    or other & 3 not in (STV_DEFAULT, STV_PROTECTED)
                    or (shndx == SHN_ABS and value == 0)):  # a version node (VERS_1.0)
                continue
            symbol = elf.cstring(strtab + name)
            if symbol not in LINKER_SYMBOLS:
                names.add(symbol)
    return sorted(names)


def interpreter(path: str | Path) -> str | None:
    """The program interpreter (dynamic loader) an executable names (PT_INTERP), or None."""
    elf = _Elf(path)
    for seg in elf.segments:
        if seg[0] == PT_INTERP:
            return elf.cstring(seg[2] if elf.is64 else seg[1])  # p_offset
    return None


class LoaderUnavailable(RuntimeError):
    """No dynamic loader that can bind a library on its own (glibc's ld.so) was found."""


_UNDEFINED = re.compile(r"undefined symbol: (\S+)")
_NOT_FOUND = re.compile(r"^\s*(\S+) => not found", re.MULTILINE)
_NO_VERSION = re.compile(r"version `([^']+)' not found")


def unresolved_symbols(path: str | Path, env: dict[str, str] | None = None,
                       timeout: float = 60.0) -> dict[str, list[str]]:
    """Binds every symbol of the library at `path` (as dlopen with RTLD_NOW does) in a fresh
    process that holds nothing but the library and the libraries it depends on: the dynamic
    loader in its trace mode (what `ldd -r` runs; it runs no code of the library, not even its
    constructors). {"symbols": undefined symbols, "libraries": dependencies not found,
    "versions": symbol versions not found}; all empty when the library is linked completely.
    LoaderUnavailable when this Python has no glibc-style loader to ask."""
    try:
        loader = interpreter(os.path.realpath(sys.executable))
    except (OSError, NotElf):
        loader = None
    if not loader or not Path(loader).exists() or "ld-linux" not in Path(loader).name:
        raise LoaderUnavailable(f"no glibc dynamic loader found (PT_INTERP of "
                                f"{sys.executable}: {loader})")
    full = {**os.environ, **(env or {}), "LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes",
            "LD_BIND_NOW": "yes"}
    full.pop("LD_PRELOAD", None)  # a preloaded library would resolve what the plugin lacks
    proc = subprocess.run([loader, str(path)], env=full, capture_output=True, text=True,
                          timeout=timeout)
    text = proc.stdout + "\n" + proc.stderr
    found = {"symbols": sorted(set(_UNDEFINED.findall(text))),
             "libraries": sorted(set(_NOT_FOUND.findall(text))),
             "versions": sorted(set(_NO_VERSION.findall(text)))}
    if proc.returncode != 0 and not any(found.values()):
        raise LoaderUnavailable(f"{loader} could not trace {path} (exit {proc.returncode}): "
                                f"{text.strip()[-300:]}")
    return found
