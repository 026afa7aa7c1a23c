"""Generates docs/ops.md: every op of ops.yaml with its signature, dtypes, tolerance, and
primitive/composite status.

Run: python -m phi_ops.codegen.gen_docs [--check]   (from the repository root)"""

from __future__ import annotations

from pathlib import Path

from phi_ops.codegen.gen_python import signature
from phi_ops.codegen.output import run
from phi_ops.schema import load_ops

OUT = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def _tolerance(op) -> str:
    if not op.tolerance:
        return "exact"
    parts = []
    for dtype, spec in op.tolerance.items():
        parts.append(dtype + " " + ", ".join(f"{k} {v:g}" for k, v in spec.items()))
    return f"{op.tolerance_profile}: " + "; ".join(parts) + " (other dtypes exact)"


def generate() -> str:
    ops = load_ops()
    prims = [n for n, op in ops.items() if op.is_primitive]
    out = [
        "# The op library",
        "",
        "GENERATED from `phi_ops/ops.yaml` by `phi_ops/codegen/gen_docs.py`: do not edit by "
        "hand.",
        "",
        f"{len(ops)} ops, of which **{len(prims)} are primitives**: a plugin that implements the "
        "primitives runs every op, because each composite decomposes into other ops "
        "(`phi_ops/decompositions.py`). A plugin may still register a kernel for a composite "
        "(a fused `rms_norm`, say); it then takes priority. `hwport.phi_ops.primitives()` lists "
        "them. Every op is `hwport.<name>(...)`; `nn` ops are also in `hwport.nn.functional`; "
        "methods are also `Tensor.<name>`.",
        "",
        "Primitives: " + ", ".join(f"`{p}`" for p in prims) + ".",
        "",
    ]
    categories: dict[str, list] = {}
    for op in ops.values():
        categories.setdefault(op.category, []).append(op)
    for category, members in categories.items():
        out += [f"## {category}", "", "| op | signature | kind | dtypes | tolerance |",
                "|---|---|---|---|---|"]
        for op in members:
            kind = op.kind + (f" (`{op.decompose}`)" if op.decompose else "")
            extras = []
            if op.method:
                extras.append("method")
            if op.operators:
                extras.append(" ".join(f"`{d}`" for d in op.operators))
            if op.nn:
                extras.append("nn")
            doc = op.doc + (f" [{'; '.join(extras)}]" if extras else "")
            if op.kernel:
                doc += f" Kernel: {op.kernel}"
            out.append(f"| **{op.name}** — {doc} | `{op.name}({signature(op)})` | {kind} | "
                       f"{', '.join(op.dtypes)} | {_tolerance(op)} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    return run(generate, OUT, "phi_ops.codegen.gen_docs", __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
