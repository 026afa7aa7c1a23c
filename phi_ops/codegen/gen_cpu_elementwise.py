"""Generates the CPU plugin's elementwise op table from phi_ops/ops.yaml.

    python gen_cpu_elementwise.py <ops.yaml> <out_dir>

writes <out_dir>/elementwise_ops.h (only when its content changes, so builds stay incremental).
The header is a set of X-macro tables that device_plugins/cpu/kernels_elementwise.c expands into
one inner loop per (op, dtype) and one kernel per op:

- the primitives of category unary and binary that have a `c_expr`, and the ternary `where`;
- per op, CPU_EW_DTYPES_<op>(M, arg) lists exactly the dtypes its kernel registers for: the
  op's `kernel_dtypes`, else its `dtypes` (a group of `dtype_groups` or a list), restricted to
  the float dtypes when
  `out_dtype` is `float` (the host casts integer inputs to float32 first, e.g. divide);
- per op, CPU_EW_EXPR_<op>(inputs...) is the `c_expr` with every function call `f(...)` renamed
  cpu_ew_f(...) (the plugin maps those to the right variant per compute type: expf for float,
  exp for double, exact integer versions...), unless the includer defined that macro first
  (an override where the C expression alone does not give the op's semantics for every dtype).

Standalone on purpose: it runs at build time with only Python 3.11 and PyYAML.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

HEADER_NAME = "elementwise_ops.h"

# The ABI's dtypes (runtime/include/hwport/types.h) as the CPU plugin names them:
# yaml name -> (HWP_DTYPE_<CODE>, plugin name, storage type). Order = HWP_DType order.
DTYPES = {
    "bool": ("BOOL", "bool_", "uint8_t"),
    "int8": ("INT8", "int8", "int8_t"),
    "uint8": ("UINT8", "uint8", "uint8_t"),
    "int16": ("INT16", "int16", "int16_t"),
    "int32": ("INT32", "int32", "int32_t"),
    "int64": ("INT64", "int64", "int64_t"),
    "float16": ("FLOAT16", "float16", "uint16_t"),
    "bfloat16": ("BFLOAT16", "bfloat16", "uint16_t"),
    "float32": ("FLOAT32", "float32", "float"),
    "float64": ("FLOAT64", "float64", "double"),
}
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
ARITY = {"unary": 1, "binary": 2, "ternary": 3}
OUT_KINDS = {"same": "OUT_SAME", "float": "OUT_SAME", "bool": "OUT_BOOL"}
DEFAULT_EXPR = {"where": "condition ? x : y"}  # ternary primitives without a c_expr

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fFlLuU]*|\.\d+(?:[eE][+-]?\d+)?[fFlL]?)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),]))"
)


class GenError(ValueError):
    """ops.yaml holds something this generator cannot turn into C (names the op)."""


def translate_expr(op: str, expr: str, params: list[str]) -> str:
    """The C expression of a macro body: parameters parenthesized, calls renamed cpu_ew_<f>."""
    tokens: list[tuple[str, str]] = []
    pos, text = 0, expr.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise GenError(f"op {op!r}: c_expr {expr!r}: cannot parse at {text[pos:]!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    out: list[str] = []
    depth = 0
    for i, (kind, tok) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "id":
            if nxt == "(":
                out.append(f"cpu_ew_{tok}")
            elif tok in params:
                out.append(f"({tok})")
            else:
                raise GenError(f"op {op!r}: c_expr {expr!r}: unknown name {tok!r} "
                               f"(inputs are {params})")
        else:
            depth += tok == "("
            depth -= tok == ")"
            if depth < 0:
                raise GenError(f"op {op!r}: c_expr {expr!r}: unbalanced parentheses")
            out.append(tok)
    if depth != 0 or not out:
        raise GenError(f"op {op!r}: c_expr {expr!r}: unbalanced parentheses or empty")
    # One space between tokens, none inside parentheses, before commas or after a call's name.
    body = ""
    for i, tok in enumerate(out):
        prev = out[i - 1] if i else ""
        if i and prev != "(" and tok not in (")", ",") and not (tok == "(" and
                                                                 prev.startswith("cpu_ew_")):
            body += " "
        body += tok
    return f"({body})"


def resolve_dtypes(op: dict, groups: dict) -> list[str]:
    spec = op.get("kernel_dtypes", op.get("dtypes"))
    if isinstance(spec, str):
        if spec not in groups:
            raise GenError(f"op {op['name']!r}: unknown dtype group {spec!r}")
        names = list(groups[spec])
    elif isinstance(spec, list):
        names = list(spec)
    else:
        raise GenError(f"op {op['name']!r}: dtypes must be a group name or a list")
    for n in names:
        if n not in DTYPES:
            raise GenError(f"op {op['name']!r}: unknown dtype {n!r}")
    if op.get("out_dtype", "same") == "float":
        names = [n for n in names if n in FLOAT_DTYPES]
    order = list(DTYPES)
    return sorted(dict.fromkeys(names), key=order.index)


def select_ops(doc: dict) -> list[dict]:
    """The ops the table covers, in ops.yaml order, each as a normalized dict."""
    groups = doc.get("dtype_groups", {})
    selected = []
    for op in doc.get("ops", []):
        name, cat = op.get("name"), op.get("category")
        if op.get("kind") != "primitive" or cat not in ARITY:
            continue
        expr = op.get("c_expr") or DEFAULT_EXPR.get(name)
        if expr is None:
            continue  # a primitive without a C form (cast) has a hand-written kernel
        inputs = [str(i) for i in op.get("inputs", [])]
        if len(inputs) != ARITY[cat] or any(not re.fullmatch(r"[A-Za-z_]\w*", i) for i in inputs):
            raise GenError(f"op {name!r}: category {cat} needs {ARITY[cat]} plain inputs, "
                           f"got {inputs}")
        out = op.get("out_dtype", "same")
        if out not in OUT_KINDS:
            raise GenError(f"op {name!r}: out_dtype {out!r} has no elementwise C form "
                           f"(same, bool or float)")
        dtypes = resolve_dtypes(op, groups)
        if not dtypes:
            raise GenError(f"op {name!r}: no dtype left to register")
        selected.append({
            "name": name, "category": cat, "inputs": inputs, "c_expr": expr,
            "expr": translate_expr(name, expr, inputs), "out": OUT_KINDS[out],
            "out_dtype": out, "dtypes": dtypes, "group": op.get("dtypes"),
        })
    return selected


def _macro(lines: list[str], width: int = 99) -> str:
    """A multi-line #define with aligned continuation backslashes."""
    out = []
    for i, line in enumerate(lines):
        if i < len(lines) - 1:
            out.append(line.ljust(width - 1) + "\\")
        else:
            out.append(line)
    return "\n".join(out)


def render(ops: list[dict], source: str = "phi_ops/ops.yaml") -> str:
    parts = [
        f"/* Generated from {source} by phi_ops/codegen/gen_cpu_elementwise.py: do not edit.",
        " *",
        " * The CPU plugin's elementwise op table (see the generator for what each macro means):",
        " *   CPU_EW_{UNARY,BINARY,TERNARY}_OPS(X)  X(op, OUT) per op, OUT = OUT_SAME | OUT_BOOL",
        " *   CPU_EW_DTYPES_<op>(M, arg)            M(arg, CODE, name, storage) per dtype",
        " *   CPU_EW_EXPR_<op>(inputs...)           the c_expr (calls renamed cpu_ew_<f>), unless",
        " *                                         the includer defined it before (override)",
        " *   CPU_EW_SKIP_<op>                      defined by the includer: leave the op out",
        " */",
        "#ifndef HWPORT_CPU_ELEMENTWISE_OPS_H",
        "#define HWPORT_CPU_ELEMENTWISE_OPS_H",
        "",
    ]
    for op in ops:
        n = op["name"]
        group = op["group"] if isinstance(op["group"], str) else "list"
        parts.append(f"/* {n} ({op['category']}, dtypes {group}, out {op['out_dtype']}): "
                     f"{op['c_expr']} */")
        params = ", ".join(op["inputs"])
        parts.append(f"#ifndef CPU_EW_EXPR_{n}")
        parts.append(f"#define CPU_EW_EXPR_{n}({params}) {op['expr']}")
        parts.append("#endif")
        lines = [f"#define CPU_EW_DTYPES_{n}(M, arg)"]
        for d in op["dtypes"]:
            code, cname, storage = DTYPES[d]
            lines.append(f"  M(arg, {code}, {cname}, {storage})")
        parts.append(_macro(lines))
        parts.append(f"#ifdef CPU_EW_SKIP_{n}")
        parts.append(f"#define CPU_EW_ENTRY_{n}(X)")
        parts.append("#else")
        parts.append(f"#define CPU_EW_ENTRY_{n}(X) X({n}, {op['out']})")
        parts.append("#endif")
        parts.append("")
    for cat in ("unary", "binary", "ternary"):
        names = [op["name"] for op in ops if op["category"] == cat]
        lines = [f"#define CPU_EW_{cat.upper()}_OPS(X)"] + [f"  CPU_EW_ENTRY_{n}(X)" for n in names]
        if not names:
            lines = [f"#define CPU_EW_{cat.upper()}_OPS(X)"]
        parts.append(_macro(lines))
    parts.append("")
    parts.append(f"#define CPU_EW_NUM_OPS {len(ops)}")
    parts.append("")
    parts.append("#endif /* HWPORT_CPU_ELEMENTWISE_OPS_H */")
    return "\n".join(parts) + "\n"


def load(ops_yaml: str | Path) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(ops_yaml, encoding="utf-8") as f:
        return yaml.load(f, Loader=loader)  # a safe loader


def generate(ops_yaml: str | Path, out_dir: str | Path) -> Path:
    """Writes out_dir/elementwise_ops.h (untouched when unchanged); returns its path."""
    return write_if_changed(Path(out_dir) / HEADER_NAME, render(select_ops(load(ops_yaml))))


def write_if_changed(out: Path, text: str) -> Path:
    """Writes `text` to `out` (atomically) unless it already holds it, so builds stay
    incremental; returns `out`. Shared by the plugin generators."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    return out


def cli(argv: list[str], name: str, usage: str, nargs: int, generate_fn, variadic: bool = False
        ) -> int:
    """The plugin generators' command line: `nargs` arguments (at least, when variadic) passed
    to generate_fn; exit 2 with the usage, 1 with the error, 0 when written."""
    n = len(argv) - 1
    if n < nargs or (n > nargs and not variadic):
        print(f"usage: {Path(argv[0]).name} {usage}", file=sys.stderr)
        return 2
    try:
        generate_fn(*argv[1:])
    except (GenError, OSError, yaml.YAMLError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    return cli(argv, "gen_cpu_elementwise", "<ops.yaml> <out_dir>", 2, generate)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
