"""Generates the CPU plugin's elementwise op table from phi_ops/ops.yaml.

    python gen_cpu_elementwise.py <ops.yaml> <out_dir>

writes <out_dir>/elementwise_ops.h (only when its content changes, so builds stay incremental).
The header is a set of X-macro tables that device_plugins/cpu/kernels_elementwise.c expands into
one inner loop per (op, dtype) and one kernel per op:

- the primitives of category unary and binary that have a `c_expr`, the ternary `where`, and
  the composites with an elementwise `native` expression (a unary or binary op by its inputs);
- per op, CPU_EW_DTYPES_<op>(M, arg) lists exactly the dtypes its kernel registers for: the
  op's `kernel_dtypes`, else its `dtypes` (a group of `dtype_groups` or a list), restricted to
  the float dtypes when
  `out_dtype` is `float` (the host casts integer inputs to float32 first, e.g. divide);
- per op, CPU_EW_MATH_<op> is 1 when its expression calls vector math (MATH_CALLS: exp, log,
  sin, tanh, erf, pow, ...), else 0: such loops are compute-bound, and the plugin keeps their
  big outputs on ordinary stores (non-temporal ones would stall them; elementwise_iter.h);
- per op, CPU_EW_EXPR_<op>(inputs...) is the `c_expr` with every function call `f(...)` renamed
  cpu_ew_f(...) (the plugin maps those to the right variant per compute type: expf for float,
  exp for double, exact integer versions...), unless the includer defined that macro first
  (an override where the C expression alone does not give the op's semantics for every dtype).
  A native expression may also name the op's attrs (locals ew_attr_<name> the loop declares
  from the launch's attribute slots, CPU_EW_LOAD_ATTRS_<op>), float literals (cast to the
  compute type ew_ct, so float math stays in float) and earlier native composites without
  attrs (their expression inlined).

Standalone on purpose: it runs at build time with only Python 3.11 and PyYAML.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
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
# How a native expression's attrs reach the kernel (device_plugins/common/native_attrs.h).
ATTR_KINDS = {"flag": "HWPS_ATTR_FLAG", "scalar": "HWPS_ATTR_SCALAR", "value": "HWPS_ATTR_VALUE"}
ATTR_ABSENT = {"required": "HWPS_ABSENT_REQUIRED", "lowest": "HWPS_ABSENT_LOWEST",
               "highest": "HWPS_ABSENT_HIGHEST"}
MAX_ATTRS = 4  # HWPS_MAX_NATIVE_ATTRS

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fFlLuU]*|\.\d+(?:[eE][+-]?\d+)?[fFlL]?)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),]))"
)


# Functions that compile to a vector-math routine (tens of instructions per vector), not to an
# instruction or two (sqrt, fabs, floor, fmax...).
MATH_CALLS = ("exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
              "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
              "erf", "erfc", "pow", "lgamma", "tgamma")
_MATH_CALL = re.compile(r"\bcpu_ew_(?:" + "|".join(MATH_CALLS) + r")\s*\(")


class GenError(ValueError):
    """ops.yaml holds something this generator cannot turn into C (names the op)."""


def _tokenize(op: str, expr: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos, text = 0, expr.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise GenError(f"op {op!r}: c_expr {expr!r}: cannot parse at {text[pos:]!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


def _closing(tokens: list[tuple[str, str]], start: int) -> int:
    """Index of the ')' matching the '(' at tokens[start] (-1: none)."""
    depth = 0
    for j in range(start, len(tokens)):
        depth += tokens[j][1] == "("
        depth -= tokens[j][1] == ")"
        if depth == 0:
            return j
    return -1


def _split_args(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    args: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for t in tokens:
        if t[1] == "," and depth == 0:
            args.append([])
            continue
        depth += t[1] == "("
        depth -= t[1] == ")"
        args[-1].append(t)
    return args


def _join(out: list[str]) -> str:
    # One space between tokens, none inside parentheses, before commas or after a call's name.
    body = ""
    for i, tok in enumerate(out):
        prev = out[i - 1] if i else ""
        if i and prev != "(" and tok not in (")", ",") and not (tok == "(" and
                                                                 prev.startswith("cpu_ew_")):
            body += " "
        body += tok
    return body


def _translate(op: str, expr: str, tokens: list[tuple[str, str]], names: dict[str, str],
               inline: dict[str, tuple[list[str], str]], depth: int = 0) -> str:
    """The body (no outer parentheses) of the C form of `tokens`."""
    if depth > 8:
        raise GenError(f"op {op!r}: c_expr {expr!r}: native ops inline each other in a cycle")
    out: list[str] = []
    level = 0
    i = 0
    while i < len(tokens):
        kind, tok = tokens[i]
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "id" and nxt == "(" and tok in inline:
            close = _closing(tokens, i + 1)
            if close < 0:
                raise GenError(f"op {op!r}: c_expr {expr!r}: unbalanced parentheses")
            params, callee = inline[tok]
            args = _split_args(tokens[i + 2:close])
            if len(args) != len(params) or not all(args):
                raise GenError(f"op {op!r}: c_expr {expr!r}: {tok} takes {len(params)} "
                               f"argument(s)")
            sub = {}
            for p, a in zip(params, args, strict=True):
                body = _translate(op, expr, a, names, inline, depth + 1)
                sub[p] = body if len(a) == 1 else f"({body})"
            out.append("(" + _translate(op, callee, _tokenize(op, callee), sub, inline,
                                        depth + 1) + ")")
            i = close + 1
            continue
        if kind == "id":
            if nxt == "(":
                out.append(f"cpu_ew_{tok}")
            elif tok in names:
                out.append(names[tok])
            else:
                raise GenError(f"op {op!r}: c_expr {expr!r}: unknown name {tok!r} "
                               f"(inputs and attrs are {sorted(names)})")
        elif kind == "num" and re.search(r"[.eE]", tok) and not tok.lower().startswith("0x"):
            out.append(f"((ew_ct){tok})")  # a float literal computes in the compute type
        else:
            level += tok == "("
            level -= tok == ")"
            if level < 0:
                raise GenError(f"op {op!r}: c_expr {expr!r}: unbalanced parentheses")
            out.append(tok)
        i += 1
    if level != 0 or not out:
        raise GenError(f"op {op!r}: c_expr {expr!r}: unbalanced parentheses or empty")
    return _join(out)


def translate_expr(op: str, expr: str, params: list[str], attrs: Sequence[str] = (),
                   inline: dict[str, tuple[list[str], str]] | None = None) -> str:
    """The C expression of a macro body: parameters parenthesized, calls renamed cpu_ew_<f>,
    attrs named ew_attr_<name> (locals the plugin declares), float literals cast to the
    compute type ew_ct, and calls of the ops in `inline` (name -> (params, expr)) replaced by
    their expression."""
    names = {p: f"({p})" for p in params}
    names.update({a: f"(ew_attr_{a})" for a in attrs})
    return f"({_translate(op, expr, _tokenize(op, expr), names, inline or {})})"


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


def native_expr(op: dict) -> tuple[str, dict] | None:
    """A composite's elementwise `native` field as (expression, attr conversions); None when it
    has none (or a hand-written kernel: `native: true`)."""
    spec = op.get("native")
    if spec is None or spec is True:
        return None
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, dict) and isinstance(spec.get("expr"), str):
        return spec["expr"], dict(spec.get("attrs") or {})
    raise GenError(f"op {op.get('name')!r}: native must be a C expression, true, or "
                   f"{{expr, attrs}}")


def _native_attrs(op: dict, expr: str, conv: dict) -> list[dict]:
    """The attrs the expression names, in the op's order: name, kind (flag | scalar | value),
    absent (required | lowest | highest)."""
    declared = op.get("attrs") or {}
    used = {t for k, t in _tokenize(op["name"], expr) if k == "id"}
    unknown = set(conv) - set(declared)
    if unknown:
        raise GenError(f"op {op['name']!r}: native attrs {sorted(unknown)} are not attrs")
    out = []
    for name, spec in declared.items():
        if name not in used:
            continue
        c = conv.get(name) or {}
        if spec.get("type") == "bool":
            kind = "flag"
        elif spec.get("type") in ("float", "int"):
            kind = c.get("as", "scalar")
        else:
            raise GenError(f"op {op['name']!r}: attr {name!r} of type {spec.get('type')!r} "
                           f"cannot be used in a native expression")
        absent = c.get("absent", "required")
        if kind not in ATTR_KINDS or absent not in ATTR_ABSENT:
            raise GenError(f"op {op['name']!r}: attr {name!r}: as must be one of "
                           f"{sorted(ATTR_KINDS)}, absent one of {sorted(ATTR_ABSENT)}")
        out.append({"name": name, "kind": kind, "absent": absent})
    if len(out) > MAX_ATTRS:
        raise GenError(f"op {op['name']!r}: at most {MAX_ATTRS} attrs in a native expression")
    return out


def select_ops(doc: dict) -> list[dict]:
    """The ops the table covers, in ops.yaml order, each as a normalized dict: the primitives
    of category unary, binary and ternary with a C form, and the composites with an elementwise
    `native` expression (their "category" is unary or binary by their number of inputs)."""
    groups = doc.get("dtype_groups", {})
    selected = []
    inline: dict[str, tuple[list[str], str]] = {}
    for op in doc.get("ops", []):
        name, cat = op.get("name"), op.get("category")
        attrs: list[dict] = []
        if op.get("kind") == "composite":
            native = native_expr(op)
            if native is None:
                continue
            expr, conv = native
            n_in = len(op.get("inputs") or [])
            if n_in not in (1, 2):
                raise GenError(f"op {name!r}: a native expression needs 1 or 2 inputs")
            cat = "unary" if n_in == 1 else "binary"
            attrs = _native_attrs(op, expr, conv)
        else:
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
        c = translate_expr(name, expr, inputs, [a["name"] for a in attrs], inline)
        if op.get("kind") == "composite" and not attrs:
            inline[name] = (inputs, expr)  # later native expressions may call it
        selected.append({
            "name": name, "category": cat, "inputs": inputs, "c_expr": expr,
            "expr": c, "out": OUT_KINDS[out], "out_dtype": out, "dtypes": dtypes,
            "group": op.get("dtypes"), "attrs": attrs,
            "composite": op.get("kind") == "composite",
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


def attr_decls(op: dict, slot: str) -> str:
    """The declarations of the locals ew_attr_<name> the op's expression reads: `slot` formats
    slot i's int64 (a C expression with {i}); numbers take the compute type ew_ct."""
    decls = []
    for i, a in enumerate(op.get("attrs", [])):
        value = slot.format(i=i)
        if a["kind"] == "flag":
            decls.append(f"const int ew_attr_{a['name']} = (int)({value});")
        else:
            decls.append(f"const ew_ct ew_attr_{a['name']} = EW_ATTR_CT({value});")
    return " ".join(decls)


def hoist_macro(op: dict) -> str:
    """CPU_EW_HOIST_<op>(...): the loop (the macro's arguments) once per value of each flag
    attr, each copy under its own `if` with the flag shadowed by a constant of that value."""
    body = "__VA_ARGS__"
    for a in reversed([a for a in op.get("attrs", []) if a["kind"] == "flag"]):
        v = f"ew_attr_{a['name']}"
        body = (f"if ({v}) {{ const int {v} = 1; {body} }} "
                f"else {{ const int {v} = 0; {body} }}")
    return f"#define CPU_EW_HOIST_{op['name']}(...) {body}"


def attr_specs(op: dict) -> str:
    """The op's attr specs as hwps_attr_spec initializers, each followed by a comma."""
    return " ".join(f'{{"{a["name"]}", {ATTR_KINDS[a["kind"]]}, {ATTR_ABSENT[a["absent"]]}}},'
                    for a in op.get("attrs", []))


def attr_macros(op: dict) -> list[str]:
    n = op["name"]
    return [f"#define CPU_EW_LOAD_ATTRS_{n}(aux) {attr_decls(op, '((const int64_t *)(aux))[{i}]')}"
            .rstrip(),
            f"#define CPU_EW_NATTRS_{n} {len(op.get('attrs', []))}",
            f"#define CPU_EW_MATH_{n} {int(bool(_MATH_CALL.search(op['expr'])))}",
            f"#define CPU_EW_ATTR_SPECS_{n} {attr_specs(op)}".rstrip(),
            hoist_macro(op)]


def render(ops: list[dict], source: str = "phi_ops/ops.yaml") -> str:
    parts = [
        f"/* Generated from {source} by phi_ops/codegen/gen_cpu_elementwise.py: do not edit.",
        " *",
        " * The CPU plugin's elementwise op table (see the generator for what each macro means):",
        " *   CPU_EW_{UNARY,BINARY,TERNARY}_OPS(X)  X(op, OUT) per op, OUT = OUT_SAME | OUT_BOOL",
        " *   CPU_EW_DTYPES_<op>(M, arg)            M(arg, CODE, name, storage) per dtype",
        " *   CPU_EW_NATIVE_<op>(inputs...)         the c_expr (calls renamed cpu_ew_<f>)",
        " *   CPU_EW_EXPR_<op>(inputs...)           CPU_EW_NATIVE_<op>, unless the includer",
        " *                                         defined it before (an override, which may",
        " *                                         call CPU_EW_NATIVE_<op> for some types)",
        " *   CPU_EW_SKIP_<op>                      defined by the includer: leave the op out",
        " *   CPU_EW_LOAD_ATTRS_<op>(aux)           declares the attrs the expression reads",
        " *                                         (ew_attr_<name>) from the int64 slots at aux",
        " *   CPU_EW_NATTRS_<op>, CPU_EW_ATTR_SPECS_<op>  their count and hwps_attr_spec entries",
        " *   CPU_EW_MATH_<op>                      1: the expression calls vector math",
        " *   CPU_EW_HOIST_<op>(loop...)            the loop once per value of each bool attr",
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
        parts.append(f"#define CPU_EW_NATIVE_{n}({params}) {op['expr']}")
        parts.append(f"#ifndef CPU_EW_EXPR_{n}")
        parts.append(f"#define CPU_EW_EXPR_{n}({params}) CPU_EW_NATIVE_{n}({params})")
        parts.append("#endif")
        parts += attr_macros(op)
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
