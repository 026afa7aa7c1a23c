"""Generates the CUDA plugin's elementwise kernel tables from phi_ops/ops.yaml.

    python gen_cuda_elementwise.py <ops.yaml> <out_dir> <dtype> [<dtype> ...]

writes into <out_dir> (each only when its content changes, so builds stay incremental):

- cuda_ew_ops.cuh: one functor per unary/binary primitive with a c_expr and per composite
  with a native expression, whose call operator (a template over the compute type, given the
  launch's attribute slots) returns the op's C expression. The op selection, the
  dtype rules and the expression overrides (integer wrap-around, Python floor division and
  remainder, sign of NaN, bool bitwise_not) are the OpenCL generator's (collect() in
  gen_opencl_elementwise.py, itself built on gen_cpu_elementwise.py); the ew_<f> functions the
  expressions call live in device_plugins/cuda/ew_math.cuh.
- cuda_ew_<dtype>.cu, one per requested dtype: the table of (op, kind, launcher) for every op
  registered for that dtype, each launcher an instantiation of the one template in
  device_plugins/cuda/ew_kernels.cuh (a file per dtype so that the build compiles them in
  parallel and rebuilds only what changed).
- cuda_ew_tables.h: the tables' declarations and the dtype -> table list;
- cuda_dtypes.h: CU_DTYPE_MASK, the dtypes every kernel family of the plugin registers (the ones
  given on the command line).

Standalone: it runs at build time with only Python 3.11 and PyYAML.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_cpu_elementwise import DTYPES, GenError, cli, load, write_if_changed
from gen_opencl_elementwise import OCL_DTYPES, attr_decls, attr_specs, collect

OPS_HEADER = "cuda_ew_ops.cuh"
TABLES_HEADER = "cuda_ew_tables.h"
DTYPES_HEADER = "cuda_dtypes.h"
KIND = {"unary": "CU_EW_UNARY", "binary": "CU_EW_BINARY", "where": "CU_EW_WHERE",
        "cast": "CU_EW_CAST", "copy": "CU_EW_COPY", "fill": "CU_EW_FILL"}
HEAD = ("/* Generated from phi_ops/ops.yaml by phi_ops/codegen/gen_cuda_elementwise.py: "
        "do not edit. */")


def code_of(dtype: str) -> int:
    return OCL_DTYPES[dtype][0]


def functor(op: dict) -> str:
    params = ", ".join(f"T {name}" for name in op["inputs"])  # the expression's names
    decls = attr_decls(op, "at[{i}]")
    body = f"typedef T ew_ct; {decls + ' ' if decls else ''}(void)at; return {op['expr']};"
    return (f"struct cu_ew_f_{op['name']} {{\n"
            f"  template <class T>\n"
            f"  CU_D auto operator()({params}, const int64_t *at) const {{\n"
            f"    {body}\n"
            f"  }}\n"
            f"}};\n")


def launcher(op: dict, dtype: str) -> str:
    d, kind = code_of(dtype), op["kind"]
    if kind == "unary":
        return f"cu_ew_launch<cu_ew_unary<{d}, cu_ew_f_{op['name']}, {int(op['out_bool'])}>>"
    if kind == "binary":
        return f"cu_ew_launch<cu_ew_binary<{d}, cu_ew_f_{op['name']}, {int(op['out_bool'])}>>"
    if kind == "cast":
        return f"cu_ew_launch_cast<{d}>"
    return f"cu_ew_launch<cu_ew_{kind}<{d}>>"


def render_ops(ops: list[dict]) -> str:
    parts = [HEAD, "#ifndef HWPORT_CUDA_EW_OPS_CUH", "#define HWPORT_CUDA_EW_OPS_CUH", "",
             '#include "ew_math.cuh"', ""]
    parts += [functor(op) for op in ops if op["kind"] in ("unary", "binary")]
    parts.append("#endif /* HWPORT_CUDA_EW_OPS_CUH */")
    return "\n".join(parts) + "\n"


def render_table(ops: list[dict], dtype: str) -> str:
    parts = [HEAD, f"/* The elementwise kernels of dtype {dtype}. */",
             '#include "cuda_ew_ops.cuh"', '#include "cuda_ew_tables.h"', "",
             f"extern const cu_ew_entry cu_ew_table_{dtype}[] = {{"]
    for op in ops:
        if dtype in op["dtypes"]:
            attrs = op.get("attrs", [])
            specs = attr_specs(op) or "{nullptr, 0, 0}"
            parts.append(f'    {{"{op["name"]}", {KIND[op["kind"]]}, '
                         f'{int(op.get("out_bool", False))}, {launcher(op, dtype)}, '
                         f'{len(attrs)}, {{{specs}}}}},')
    parts.append("    {nullptr, 0, 0, nullptr, 0, {{nullptr, 0, 0}}},")
    parts.append("};")
    return "\n".join(parts) + "\n"


def render_dtypes(dtypes: list[str]) -> str:
    mask = sum(1 << code_of(d) for d in dtypes)
    return "\n".join([HEAD, "#ifndef HWPORT_CUDA_DTYPES_H", "#define HWPORT_CUDA_DTYPES_H",
                      f"/* The dtypes the plugin registers kernels for: {', '.join(dtypes)}. */",
                      f"#define CU_DTYPE_MASK 0x{mask:03x}u", "#endif"]) + "\n"


def render_tables(dtypes: list[str]) -> str:
    parts = [HEAD, "#ifndef HWPORT_CUDA_EW_TABLES_H", "#define HWPORT_CUDA_EW_TABLES_H", "",
             '#include "ew_kernels.cuh"', ""]
    parts += [f"extern const cu_ew_entry cu_ew_table_{d}[];" for d in dtypes]
    parts += ["", "static const struct { int dtype; const cu_ew_entry *table; } cu_ew_tables[] = {"]
    parts += [f"    {{{code_of(d)}, cu_ew_table_{d}}}," for d in dtypes]
    parts += ["};", f"#define CU_EW_NUM_TABLES {len(dtypes)}", "",
              "#endif /* HWPORT_CUDA_EW_TABLES_H */"]
    return "\n".join(parts) + "\n"


def generate(ops_yaml: str | Path, out_dir: str | Path, dtypes: list[str]) -> list[Path]:
    for d in dtypes:
        if d not in DTYPES:
            raise GenError(f"unknown dtype {d!r} (known: {', '.join(DTYPES)})")
    order = list(DTYPES)
    dtypes = sorted(dict.fromkeys(dtypes), key=order.index)
    ops = collect(load(ops_yaml))
    out = Path(out_dir)
    written = [out / OPS_HEADER, out / TABLES_HEADER, out / DTYPES_HEADER]
    write_if_changed(written[0], render_ops(ops))
    write_if_changed(written[1], render_tables(dtypes))
    write_if_changed(written[2], render_dtypes(dtypes))
    for d in dtypes:
        path = out / f"cuda_ew_{d}.cu"
        write_if_changed(path, render_table(ops, d))
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    return cli(argv, "gen_cuda_elementwise", "<ops.yaml> <out_dir> <dtype> [<dtype> ...]", 3,
               lambda ops_yaml, out_dir, *dtypes: generate(ops_yaml, out_dir, list(dtypes)),
               variadic=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
