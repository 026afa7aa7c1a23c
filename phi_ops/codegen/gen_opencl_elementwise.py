"""Generates the OpenCL plugin's elementwise programs from phi_ops/ops.yaml.

    python gen_opencl_elementwise.py <ops.yaml> <elementwise_prelude.cl>[,<more.cl>...] <out_dir>

writes <out_dir>/ocl_elementwise_gen.h (only when its content changes). The header holds:

- ocl_ew_program_source[HWP_DTYPE_COUNT]: per dtype D, the OpenCL C source of one program:
  "#define DT_<D> 1", the prelude (device_plugins/opencl/elementwise_prelude.cl: loads, stores,
  compute types and the ew_<f> functions c_expr calls; then expf.cl and elementwise_vector.cl),
  then one kernel per op registered for D: k_<op> (with kc_<op>, the contiguous fast path, and
  for the ops of VECTOR_EXPR in float32/float16 kv_<op>, explicit vectors) for the
  unary/binary primitives with a c_expr and the composites with a native expression (the CPU
  generator's selection and dtype rules, phi_ops/codegen/gen_cpu_elementwise.py; a composite's
  attrs come from the `at` argument's slots), k_where, k_cast (every target; the target code is
  the `arg` kernel argument), k_copy and k_fill (raw bits in the `sa.s0` argument);
- ocl_ew_ops[]: {op name, kind, mask of the dtypes (1 << HWP_DType) it is registered for,
  the attr specs a native composite's kernel reads (hwps_attr_spec, native_attrs.h), mask of
  the dtypes with a kv_<op>}.

Where the C expression alone does not give numpy's semantics (integer wrap-around, Python floor
division/remainder, sign of NaN, bool bitwise_not), the expression is overridden (OVERRIDES),
exactly as the CPU plugin does.

Standalone: it runs at build time with only Python 3.11 and PyYAML.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_cpu_elementwise import (
    DTYPES,
    GenError,
    attr_decls,
    attr_specs,
    cli,
    load,
    resolve_dtypes,
    select_ops,
    write_if_changed,
)

HEADER_NAME = "ocl_elementwise_gen.h"

# yaml dtype -> (HWP_DType code, program name, output itemsize, raw suffix, fill-bits expr)
OCL_DTYPES = {
    "bool": (0, "bool_", 1, "u8", "(uchar)bits"),
    "int8": (1, "int8", 1, "i8", "(char)bits"),
    "uint8": (2, "uint8", 1, "u8", "(uchar)bits"),
    "int16": (3, "int16", 2, "i16", "(short)bits"),
    "int32": (4, "int32", 4, "i32", "(int)bits"),
    "int64": (5, "int64", 8, "i64", "bits"),
    "float16": (6, "float16", 2, "u16", "(ushort)bits"),
    "bfloat16": (7, "bfloat16", 2, "u16", "(ushort)bits"),
    "float32": (8, "float32", 4, "f32", "as_float((uint)bits)"),
    "float64": (9, "float64", 8, "f64", "as_double(bits)"),
}
assert list(OCL_DTYPES) == list(DTYPES)

OVERRIDES = {
    "neg": "ew_neg(x)",
    "add": "ew_add(x, y)",
    "subtract": "ew_sub(x, y)",
    "multiply": "ew_mul(x, y)",
    "floor_divide": "ew_floordiv(x, y)",
    "remainder": "ew_mod(x, y)",
    "sign": "ew_sign(x)",
    "bitwise_not": "ew_bitnot(x)",
}
# The ops with an explicit-vector kernel kv_<op> (elementwise_vector.cl) for the float dtypes
# of VECTOR_DTYPES: the op's expression over VT vectors (x, y: its inputs), computing exactly
# what the scalar expression computes lane by lane (same operations, same order).
VECTOR_EXPR = {
    "abs": "fabs(x)",
    "neg": "-x",
    "exp": "ew_vexpf(x)",
    "sqrt": "sqrt(x)",
    "floor": "floor(x)",
    "ceil": "ceil(x)",
    "round": "rint(x)",
    "relu": "EW_VMAX_NAN(x, (VT)(0.0f))",
    "sigmoid": "ew_vsigmoid(x)",
    "silu": "x * ew_vsigmoid(x)",
    "add": "x + y",
    "subtract": "x - y",
    "multiply": "x * y",
    "divide": "x / y",
    "maximum": "EW_VMAX_NAN(x, y)",
    "minimum": "EW_VMIN_NAN(x, y)",
}
# bfloat16 keeps kc_: its vector load/store (ushortN <-> uintN conversions) measured 1.5x
# slower than kc_ on PoCL 3.1.
VECTOR_DTYPES = ("float16", "float32")
KIND = {"unary": 1, "binary": 2, "where": 3, "cast": 4, "copy": 5, "fill": 6}
SPECIAL = ("cast", "copy", "fill")


def collect(doc: dict) -> list[dict]:
    """Every op the plugin registers: {name, kind, dtypes, expr (unary/binary), out_bool}."""
    ops = []
    for op in select_ops(doc):
        if op["category"] == "ternary":
            if op["name"] != "where":
                continue
            ops.append({"name": "where", "kind": "where", "dtypes": op["dtypes"]})
            continue
        expr = OVERRIDES.get(op["name"], op["expr"].replace("cpu_ew_", "ew_"))
        ops.append({"name": op["name"], "kind": op["category"], "dtypes": op["dtypes"],
                    "expr": expr, "out_bool": op["out"] == "OUT_BOOL",
                    "attrs": op["attrs"], "inputs": op["inputs"]})
    groups = doc.get("dtype_groups", {})
    by_name = {op.get("name"): op for op in doc.get("ops", [])}
    for name in SPECIAL:
        op = by_name.get(name)
        if op is None or op.get("kind") != "primitive":
            raise GenError(f"ops.yaml has no primitive {name!r}")
        ops.append({"name": name, "kind": name, "dtypes": resolve_dtypes(op, groups)})
    return ops


def kernel_source(op: dict, dtype: str) -> str:
    _code, _pname, size, _raw, fill_bits = OCL_DTYPES[dtype]
    n, kind = op["name"], op["kind"]
    head = f"__kernel void k_{n}(EW_PARAMS) {{\n"
    if kind in ("unary", "binary"):
        osz = 1 if op["out_bool"] else size
        store = "ST_BOOL" if op["out_bool"] else "ST"
        names = op["inputs"]  # the expression reads the op's input names (x, y; x, grad)
        load = f"  CT {names[0]} = LD(px, al);\n" + (
            f"  CT {names[1]} = LD(py, al);\n" if kind == "binary" else "")
        decls = attr_decls(op, "at.s{i}")
        load += f"  {decls}\n" if decls else ""
        return (head + f"  EW_PROLOGUE({osz})\n" + load +
                f"  {store}(po, al, {op['expr']});\n}}\n")
    if kind == "where":
        return (head + f"  EW_PROLOGUE({size})\n"
                "  STRAW(po, al, LDRAW(ld_bool_(px, al) ? py : pz, al));\n}\n")
    if kind == "copy":
        return head + f"  EW_PROLOGUE({size})\n  STRAW(po, al, LDRAW(px, al));\n}}\n"
    if kind == "cast":
        return (head + "  const int osz[10] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};\n"
                "  EW_PROLOGUE(osz[arg < 0 || arg > 9 ? 0 : arg])\n"
                "  cast_store(po, al, arg, LD(px, al));\n}\n")
    if kind == "fill":
        return (head + f"  EW_PROLOGUE({size})\n  long bits = sa.s0;\n"
                f"  STRAW(po, al, {fill_bits});\n}}\n")
    raise GenError(f"op {n!r}: unknown kind {kind!r}")


def contiguous_variant(op: dict, dtype: str, source: str) -> str:
    """kc_<name>: the kernel's body behind the contiguous prologue (EW_PROLOGUE_C), which is told
    each input's element size so that addresses are gid * constant and vectorize."""
    size = OCL_DTYPES[dtype][2]
    in_sizes = f"{1 if op['kind'] == 'where' else size}, {size}, {size}"
    head, _, rest = source.partition("EW_PROLOGUE(")
    out_size, _, tail = rest.partition(")\n")
    return (head.replace(f"k_{op['name']}(EW_PARAMS)", f"kc_{op['name']}(EW_PARAMS_C)", 1)
            + f"EW_PROLOGUE_C({out_size}, {in_sizes})\n" + tail)


def has_vector(op: dict, dtype: str) -> bool:
    return (op["name"] in VECTOR_EXPR and dtype in VECTOR_DTYPES and dtype in op["dtypes"]
            and op["kind"] in ("unary", "binary") and not op["out_bool"] and not op["attrs"])


def vector_variant(op: dict) -> str:
    """kv_<name> (elementwise_vector.cl): `arg` vectors of EW_VW elements per work-item."""
    names = op["inputs"]
    load = f"    VT {names[0]} = EW_VLD(px, v);\n"
    if op["kind"] == "binary":
        load += f"    VT {names[1]} = EW_VLD(py, v);\n"
    return (f"#ifdef EW_HAS_VEC\n__kernel void kv_{op['name']}(EW_PARAMS_C) {{\n"
            "  EW_PROLOGUE_V\n  for (int k = 0; k < arg; ++k, ++v) {\n" + load +
            f"    EW_VST(po, v, {VECTOR_EXPR[op['name']]});\n  }}\n}}\n#endif\n")


def c_string(text: str) -> str:
    lines = text.splitlines()
    out = []
    for line in lines:
        esc = line.replace("\\", "\\\\").replace('"', '\\"')
        out.append(f'    "{esc}\\n"')
    return "\n".join(out) if out else '    ""'


def render(ops: list[dict], prelude: str) -> str:
    parts = [
        "/* Generated from phi_ops/ops.yaml and device_plugins/opencl/elementwise_prelude.cl by",
        " * phi_ops/codegen/gen_opencl_elementwise.py: do not edit. */",
        "#ifndef HWPORT_OCL_ELEMENTWISE_GEN_H",
        "#define HWPORT_OCL_ELEMENTWISE_GEN_H",
        "",
        "#include <stdint.h>",
        "",
        '#include "native_attrs.h"',
        "",
        "enum { OCL_EW_UNARY = 1, OCL_EW_BINARY = 2, OCL_EW_WHERE = 3, OCL_EW_CAST = 4,",
        "       OCL_EW_COPY = 5, OCL_EW_FILL = 6 };",
        "typedef struct ocl_ew_op_info {",
        "  const char *name;",
        "  int kind;",
        "  uint32_t dtype_mask; /* bit d: registered for HWP_DType d */",
        "  int nattrs;          /* a native composite's attributes (the `at` slots) */",
        "  hwps_attr_spec attrs[HWPS_MAX_NATIVE_ATTRS];",
        "  uint32_t vec_mask; /* bit d: kv_<op> (explicit vectors) exists for HWP_DType d */",
        "} ocl_ew_op_info;",
        "",
        "static const ocl_ew_op_info ocl_ew_ops[] = {",
    ]
    for op in ops:
        mask = sum(1 << OCL_DTYPES[d][0] for d in op["dtypes"])
        specs = attr_specs(op) or "{NULL, 0, 0}"
        vmask = sum(1 << OCL_DTYPES[d][0] for d in op["dtypes"] if has_vector(op, d))
        parts.append(f'    {{"{op["name"]}", {KIND[op["kind"]]}, 0x{mask:03x}u, '
                     f'{len(op.get("attrs", []))}, {{{specs}}}, 0x{vmask:03x}u}},')
    parts.append("};")
    parts.append(f"#define OCL_EW_NUM_OPS {len(ops)}")
    parts.append("")
    parts.append("static const char *const ocl_ew_program_source[10] = {")
    for dtype, (_code, pname, _size, _raw, _fb) in OCL_DTYPES.items():
        src = f"#define DT_{pname} 1\n" + prelude + "\n"
        for op in ops:
            if dtype in op["dtypes"]:
                src += kernel_source(op, dtype)
                if op["kind"] != "fill":
                    src += contiguous_variant(op, dtype, kernel_source(op, dtype))
                if has_vector(op, dtype):
                    src += vector_variant(op)
        parts.append(f"    /* {dtype} */")
        parts.append(c_string(src) + ",")
    parts.append("};")
    parts.append("")
    parts.append("#endif /* HWPORT_OCL_ELEMENTWISE_GEN_H */")
    return "\n".join(parts) + "\n"


def generate(ops_yaml: str | Path, prelude: str | Path, out_dir: str | Path) -> Path:
    """prelude: one .cl file, or several separated by commas (concatenated in order)."""
    parts = [Path(p).read_text(encoding="utf-8") for p in str(prelude).split(",")]
    text = render(collect(load(ops_yaml)), "\n".join(parts))
    return write_if_changed(Path(out_dir) / HEADER_NAME, text)


def main(argv: list[str]) -> int:
    return cli(argv, "gen_opencl_elementwise", "<ops.yaml> <prelude.cl> <out_dir>", 3, generate)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
