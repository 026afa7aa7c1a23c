"""The symbols a shared object exports, read from its ELF dynamic symbol table (.dynsym) in pure
Python, so that hwcheck needs no binutils on a vendor's machine."""

from __future__ import annotations

import struct
from pathlib import Path

SHT_DYNSYM = 11
STB_GLOBAL, STB_WEAK = 1, 2
STT_OBJECT, STT_FUNC = 1, 2
STV_DEFAULT = 0
SHN_UNDEF = 0
# Defined by the linker in every shared object, not by the plugin's code.
LINKER_SYMBOLS = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__gmon_start__",
                            "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_", "__dso_handle"})


class NotElf(ValueError):
    pass


def exported_symbols(path: str | Path) -> list[str]:
    """Defined global or weak functions and objects of default visibility, sorted, without the
    linker's own (LINKER_SYMBOLS)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise NotElf(f"{path} is not an ELF file")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        sh_fmt, sym_fmt = end + "IIQQQQIIQQ", end + "IBBHQQ"
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sh_fmt, sym_fmt = end + "IIIIIIIIII", end + "IIIBBH"
    sections = [struct.unpack_from(sh_fmt, data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for sh in sections:
        if sh[1] != SHT_DYNSYM:
            continue
        offset, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
        strtab = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            if is64:
                name, info, other, shndx, _, _ = struct.unpack_from(sym_fmt, data, at)
            else:
                name, _, _, info, other, shndx = struct.unpack_from(sym_fmt, data, at)
            if (shndx == SHN_UNDEF or info >> 4 not in (STB_GLOBAL, STB_WEAK)
                    or info & 0xF not in (STT_OBJECT, STT_FUNC) or other & 3 != STV_DEFAULT):
                continue
            symbol = data[strtab + name:data.index(b"\0", strtab + name)].decode("ascii", "replace")
            if symbol not in LINKER_SYMBOLS:
                names.add(symbol)
    return sorted(names)
