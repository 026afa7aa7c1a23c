"""Regenerates abi_layout_golden.cpp from the current headers.

Only for a deliberate, reviewed ABI change (an append-only minor addition): the golden file is
checked in with literal numbers precisely so that an accidental layout change fails the build;
regenerating it must show up as a reviewed diff. Usage:

    python tests/abi/gen_abi_golden.py > tests/abi/abi_layout_golden.cpp

It needs a C++ compiler (`c++`) to measure the layout, and an LP64 target.

The header parser below is also used by tests/test_abi_headers.py to check that the golden file
covers every struct, field, enum constant and macro of the headers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "runtime" / "include"
HEADER_ORDER = ["types.h", "device.h", "kernel.h", "kernel_util.h", "ccl.h", "codegen.h",
                "profiler.h", "plugin.h", "hwport.h"]


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _split_top(text: str, sep: str) -> list[str]:
    parts, cur, depth = [], "", 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [" ".join(p.split()) for p in parts]


def _strip_param_name(param: str) -> str:
    param = param.strip()
    if param in ("void", "...", ""):
        return param
    m = re.match(r"^(.*?[\s*])(\w+)$", param)
    if m and re.search(r"\w", m.group(1)):
        return " ".join(m.group(1).split()).replace(" *", "*").replace("*", " *").strip()
    return param


def _tidy(type_id: str) -> str:
    type_id = re.sub(r"\*\s+\*", "**", type_id)
    return type_id.replace("* (*)", "*(*)")


def _wrap(line: str, width: int = 100) -> str:
    """Breaks a long HWP_GOLDEN_FIELD / static_assert line after its last top-level comma
    that keeps the head within `width`."""
    if len(line) <= width:
        return line
    cut = line.rfind(", ", 0, width)
    if cut < 0:
        return line
    return line[: cut + 1] + "\n    " + line[cut + 2:]


def field_type(decl: str) -> tuple[str, str]:
    """(field name, C++ type-id) of one member declaration."""
    fp = re.match(r"^(.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", decl)
    if fp:
        ret, name, params = fp.groups()
        params = ", ".join(_strip_param_name(p) for p in _split_top(params, ","))
        return name, _tidy(f"{' '.join(ret.split())} (*)({params})")
    arr = re.match(r"^(.*?)(\w+)\s*(\[[^\]]*\])$", decl)
    if arr:
        return arr.group(2), f"{' '.join(arr.group(1).split())}{arr.group(3)}"
    m = re.match(r"^(.*?)(\w+)$", decl)
    return m.group(2), " ".join(m.group(1).split())


def _fields(body: str, prefix: str = "") -> list[tuple[str, str]]:
    """The members of a struct body; a nested anonymous union or struct member (`union {...}
    value;`) contributes its leaves as dotted paths (value.buffer.byte_offset), which offsetof
    and decltype(T::a.b) accept."""
    out: list[tuple[str, str]] = []
    for d in (d for d in _split_top(body, ";") if d):
        nested = re.match(r"^(?:union|struct)\s*\{(.*)\}\s*(\w+)$", d, flags=re.S)
        if nested:
            out += _fields(nested.group(1), f"{prefix}{nested.group(2)}.")
        else:
            name, t = field_type(d)
            out.append((prefix + name, t))
    return out


def parse_structs(text: str) -> dict[str, list[tuple[str, str]]]:
    """{struct name: [(field, type-id), ...]} for every struct definition in `text`."""
    text = strip_comments(text)
    out: dict[str, list[tuple[str, str]]] = {}
    for m in re.finditer(r"struct\s+(\w+)\s*\{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = _fields(text[m.end(): i - 1])
    return out


def parse_enums(text: str) -> dict[str, dict[str, str]]:
    """{enum name: {constant: value expression}}."""
    text = strip_comments(text)
    out: dict[str, dict[str, str]] = {}
    for m in re.finditer(r"enum\s+(\w+)\s*\{(.*?)\}", text, flags=re.S):
        consts = {}
        for item in _split_top(m.group(2), ","):
            if item:
                name, _, value = item.partition("=")
                consts[name.strip()] = value.strip()
        out[m.group(1)] = consts
    return out


def parse_defines(text: str) -> dict[str, str]:
    """Object-like HWP_ macros with a value (not include guards, not function-like macros)."""
    text = strip_comments(text)
    out = {}
    for m in re.finditer(r"^\s*#\s*define\s+(HWP_\w+)[ \t]+([^\n]+)$", text, flags=re.M):
        out[m.group(1)] = m.group(2).strip()
    return out


def parse_typedefs(text: str) -> dict[str, str]:
    """Scalar and function-pointer typedefs: {name: type-id}."""
    text = strip_comments(text)
    out = {}
    for m in re.finditer(r"typedef\s+([^;{}]*?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^;]*)\)\s*;", text):
        params = ", ".join(_strip_param_name(p) for p in _split_top(m.group(3), ","))
        out[m.group(2)] = _tidy(f"{' '.join(m.group(1).split())} (*)({params})")
    for m in re.finditer(r"typedef\s+((?:u?int\d+_t))\s+(\w+)\s*;", text):
        out[m.group(2)] = m.group(1)
    return out


def load(include_dir: Path = INCLUDE_DIR):
    structs, enums, defines, typedefs = {}, {}, {}, {}
    for name in HEADER_ORDER:
        text = (include_dir / "hwport" / name).read_text()
        structs.update(parse_structs(text))
        enums.update(parse_enums(text))
        defines.update(parse_defines(text))
        typedefs.update(parse_typedefs(text))
    return structs, enums, defines, typedefs


def _measure(structs, enums) -> str:
    lines = ["#include <cstdio>", "#include <cstddef>", '#include "hwport/hwport.h"',
             "int main() {"]
    for s, fields in structs.items():
        lines.append(f'  std::printf("S {s} %zu %zu\\n", sizeof({s}), alignof({s}));')
        for f, _ in fields:
            lines.append(f'  std::printf("F {s} {f} %zu\\n", offsetof({s}, {f}));')
    for e, consts in enums.items():
        for c in consts:
            lines.append(f'  std::printf("E {e} {c} %lld\\n", (long long){c});')
    lines.append("  return 0;\n}")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "m.cpp"), os.path.join(tmp, "m")
        Path(src).write_text("\n".join(lines))
        subprocess.run(["c++", "-std=c++17", f"-I{INCLUDE_DIR}", src, "-o", exe], check=True)
        return subprocess.run([exe], check=True, capture_output=True, text=True).stdout


def generate() -> str:
    structs, enums, defines, typedefs = load()
    sizes, offsets, values = {}, {}, {}
    for line in _measure(structs, enums).splitlines():
        kind, *rest = line.split()
        if kind == "S":
            sizes[rest[0]] = (int(rest[1]), int(rest[2]))
        elif kind == "F":
            offsets[(rest[0], rest[1])] = int(rest[2])
        else:
            values[rest[1]] = int(rest[2])
    o = []
    w = o.append
    w("// ABI layout golden test: sizes, alignments, field offsets and field types of every struct")
    w("// in runtime/include/hwport/*.h, the value of every enum constant and ABI macro, and the")
    w("// scalar/function typedefs, written out literally for LP64 targets (x86_64/aarch64 Linux).")
    w("// It is compiled as part of the default build (tests/abi/CMakeLists.txt) and by")
    w("// tests/test_abi_headers.py, so ANY layout change fails the build. Tables grow only by")
    w("// appending (a minor version bump): then, and only then, update this file (see")
    w("// gen_abi_golden.py) and review the diff: existing lines must not change.")
    w("#include <cstddef>")
    w("#include <cstdint>")
    w("#include <type_traits>")
    w("")
    w('#include "hwport/hwport.h"')
    w("")
    w("static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && alignof(uint64_t) == 8,")
    w('              "the golden numbers below are for 64-bit (LP64) targets");')
    w("")
    w("#define HWP_GOLDEN_SIZE(T, size, align) \\")
    w('  static_assert(sizeof(T) == (size), "sizeof(" #T ") changed: the ABI broke"); \\')
    w('  static_assert(alignof(T) == (align), "alignof(" #T ") changed: the ABI broke")')
    w("#define HWP_GOLDEN_FIELD(T, field, offset, ...)                                       \\")
    w('  static_assert(offsetof(T, field) == (offset), "offset of " #T "." #field " changed"); \\')
    w("  static_assert(std::is_same<decltype(T::field), __VA_ARGS__>::value,                   \\")
    w('                "type of " #T "." #field " changed")')
    w("constexpr bool hwp_golden_streq(const char *a, const char *b) {")
    w("  return *a == *b && (*a == '\\0' || hwp_golden_streq(a + 1, b + 1));")
    w("}")
    w("#define HWP_GOLDEN_VALUE(name, value) \\")
    w('  static_assert((name) == (value), #name " changed: its value is part of the ABI")')
    w("")
    w("// ---- versions and macros")
    for name, value in defines.items():
        if name in ("HWP_EXPORT",) or "(" in name:
            continue
        if value.startswith('"'):
            continue
        if re.fullmatch(r"[0-9]+", value):
            w(f"HWP_GOLDEN_VALUE({name}, {value});")
    w('static_assert(hwp_golden_streq(HWP_PLUGIN_INIT_SYMBOL, "hwport_plugin_init"),')
    w('              "the entry point symbol is part of the ABI");')
    w("")
    w("// ---- typedefs")
    for name, t in typedefs.items():
        w(_wrap(f'static_assert(std::is_same<{name}, {t}>::value, "typedef {name} changed");'))
    w("")
    w("// ---- enum constants")
    for e, consts in enums.items():
        w(f"// {e}")
        for c in consts:
            w(f"HWP_GOLDEN_VALUE({c}, {values[c]});")
    w("")
    w("// ---- structs: size and alignment, then every field in declaration order")
    for s, fields in structs.items():
        w(f"HWP_GOLDEN_SIZE({s}, {sizes[s][0]}, {sizes[s][1]});")
        for f, t in fields:
            w(_wrap(f"HWP_GOLDEN_FIELD({s}, {f}, {offsets[(s, f)]}, {t});"))
        w("")
    return "\n".join(o).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate())
