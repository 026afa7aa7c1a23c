"""Generates the C++ VJP rules of the autograd engine (runtime/src/autograd.h) from the `vjps`
section of phi_ops/ops.yaml.

    python gen_cpp_vjp.py <ops.yaml> <out_dir>

writes <out_dir>/vjp_rules.inc (only when its content changes): per op with a rule, one C++
function per differentiable input, and `vjp_table(op id)`.

A rule maps inputs to formulas (like PyTorch's derivatives.yaml): `{x: "grad * out"}`. The
formula language is the one of the composites' formulas (gen_cpp_decomp.py's docstring), run
over ops the same way (every sub-op through the pipeline's C++ entry, so a rule is recorded
again by autograd under create_graph=True: double backward for free), with these names more:

    grad, out        the output's gradient and the output (ops with one output)
    grad_<o>, <o>    the same per output o (topk: grad_values, indices; split: grad_outs, a list)

and these builtins more (runtime/src/formula_builtins.h):

    unbroadcast(g, x)       g summed over the dims broadcasting added, to x's shape
    expand_reduced(g, x, axes, keepdim)   a reduction's gradient expanded back to x's shape
    shape(t), ndim(t)       t's shape (ints) and rank (int)
    rows(t)                 [-1, t.shape[-1]]: t as a matrix of its last dim
    inv_perm(perm, t)       the inverse of transpose's perm (None: reversed dims)
    sizes(xs, axis)         the lengths of the tensors xs along axis (concat -> split)
    slice_grad(g, x, axes, starts, ends, strides)   slice's gradient: g placed in zeros like x
    unpad(g, x, pad)        pad's gradient: the part of g that x filled
    axis_in(axis, t)        an int axis of t, non-negative
    unstack(g, xs, axis)    stack's gradient: g split along axis into the shapes of xs
    untile(g, x, repeats)   tile's gradient: the repeats of g summed, to x's shape
    neg_ints(v)             a list of ints negated (roll's shifts back)
    rotate_half(t), unrotate_half(t)   concat(-t2, t1) of t's last dim halves, its transpose

and string literals and lists ([a, 0]) as scalars. An input a rule omits gets no gradient
(where's condition, gather's index). The engine casts each gradient to its input's dtype.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable

try:
    from . import build_time
    from . import gen_cpp_decomp as decomp
except ImportError:
    import build_time
    import gen_cpp_decomp as decomp

BUILTINS, Formula, FormulaError, OpInfo = (decomp.BUILTINS, decomp.Formula, decomp.FormulaError,
                                           decomp.OpInfo)
_default_obj, _Emitter, check_formula, op_infos = (decomp._default_obj, decomp._Emitter,
                                                   decomp.check_formula, decomp.op_infos)

OUT_NAME = "vjp_rules.inc"
DECOMPOSITION = "decomposition"  # a rule's value: differentiate the decomposition
VJP_BUILTINS = {
    **BUILTINS,
    "unbroadcast": (("tensor", "tensor"), "tensor"),
    "expand_reduced": (("tensor", "tensor", "scalar", "scalar"), "tensor"),
    "shape": (("tensor",), "scalar"),
    "ndim": (("tensor",), "scalar"),
    "rows": (("tensor",), "scalar"),
    "inv_perm": (("scalar", "tensor"), "scalar"),
    "sizes": (("tensor", "scalar"), "scalar"),
    "slice_grad": (("tensor", "tensor", "scalar", "scalar", "scalar", "scalar"), "tensor"),
    "unpad": (("tensor", "tensor", "scalar"), "tensor"),
    "axis_in": (("scalar", "tensor"), "scalar"),
    "unstack": (("tensor", "tensor", "scalar"), "tensor"),
    "untile": (("tensor", "tensor", "scalar"), "tensor"),
    "neg_ints": (("scalar",), "scalar"),
    "rotate_half": (("tensor",), "tensor"),
    "unrotate_half": (("tensor",), "tensor"),
}


def outputs_of(entry: dict) -> list[str]:
    return [o.rstrip(".") for o in entry.get("outputs") or ["out"]]


def rule_names(entry: dict) -> dict[str, str]:
    """The names a rule of this op reads besides inputs and attrs -> their C++ slots' order."""
    outs = outputs_of(entry)
    if len(outs) == 1 and outs[0] == "out":
        return {"out": "out", "grad": "grad"}
    names = {o: o for o in outs}
    names.update({f"grad_{o}": f"grad_{o}" for o in outs})
    return names


def check_rule(name: str, entry: dict, rule: dict, ops: dict[str, OpInfo]) -> dict:
    """The checked formulas of op `name`'s rule (FormulaError naming op and problem)."""
    me = ops[name]
    if not isinstance(rule, dict) or not rule:
        raise FormulaError(f"ops.yaml: vjps: {name!r}: a mapping input -> formula, or "
                           f"{DECOMPOSITION!r}")
    extra = {n: "tensor" for n in rule_names(entry)}
    out = {}
    for inp, text in rule.items():
        if inp not in me.inputs:
            raise FormulaError(f"ops.yaml: vjps: {name!r}: {inp!r} is not an input of {name} "
                               f"(its inputs: {', '.join(me.inputs) or 'none'})")
        if not isinstance(text, str):
            raise FormulaError(f"ops.yaml: vjps: {name!r}: the formula of {inp!r} is a string")
        out[inp] = check_formula(name, text, ops, extra_names=extra, builtins=VJP_BUILTINS,
                                 allow_self=True, what=f"vjp of {inp}")
    return out


# Builtin/op arguments that read only a tensor's shape, dtype and place (by position).
META_ARGS = {"unbroadcast": {1}, "expand_reduced": {1}, "shape": {0}, "ndim": {0}, "rows": {0},
             "inv_perm": {1}, "sizes": {0}, "slice_grad": {1}, "unpad": {1}, "dtype_of": {0},
             "dtype_name": {0}, "result_dtype": {0, 1, 2}, "attention_scale": {1},
             "causal_mask": {0, 1}, "zeros_like": {0}, "ones_like": {0}, "down": {1}, "axes": {1},
             "all_axes": {1}, "count": {0}, "axis_in": {1}, "unstack": {1}, "untile": {1},
             "last_axes": {1}}


def _attr_default(spec: dict) -> str:
    """An attr's default as the rule reads it when a call leaves it out (nullptr: the engine
    asks the Python rules instead)."""
    v = spec.get("default")
    if spec["type"] in ("dtype", "floats") and v is not None:
        return "nullptr"
    if isinstance(v, list) and v:
        return "nullptr"
    return _default_obj(spec)


def _names_read(formulas: Iterable[Formula]) -> tuple[set[str], set[str]]:
    """(every name the formulas read, the names they read for their data)."""
    read: set[str] = set()
    data: set[str] = set()
    for f in formulas:
        nodes = [f.result] + [n for _, n in f.lets]
        for node in nodes:
            meta_only: set[int] = set()
            for n in ast.walk(node):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    for k in META_ARGS.get(n.func.id, ()):
                        if k < len(n.args) and isinstance(n.args[k], ast.Name):
                            meta_only.add(id(n.args[k]))
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    read.add(n.id)
                    if id(n) not in meta_only:
                        data.add(n.id)
    return read, data


def checked_rules(raw: dict, ops: dict[str, OpInfo]) -> dict[str, dict[str, Formula] | str]:
    """Every rule of the `vjps` section, checked: op name -> its parsed formulas per input, or
    DECOMPOSITION (FormulaError naming the op and the problem). phi_ops/schema.py checks
    ops.yaml with it; render generates from it."""
    entries = {e["name"]: e for e in raw["ops"]}
    out: dict[str, dict[str, Formula] | str] = {}
    for name, rule in (raw.get("vjps") or {}).items():
        if name not in ops:
            raise FormulaError(f"ops.yaml: vjps: {name!r} is not an op")
        if rule == DECOMPOSITION:
            if entries[name]["kind"] != "composite":
                raise FormulaError(f"ops.yaml: vjps: {name!r}: only a composite is "
                                   "differentiated through its decomposition")
            out[name] = DECOMPOSITION
        else:
            out[name] = check_rule(name, entries[name], rule, ops)
    return out


def render(raw: dict) -> str:
    ops = op_infos(raw)
    entries = {e["name"]: e for e in raw["ops"]}
    lines = ["// GENERATED by phi_ops/codegen/gen_cpp_vjp.py from the `vjps` section of",
             "// phi_ops/ops.yaml at build time: do not edit. Included once, by",
             "// runtime/src/vjp_rules.cpp (formula_builtins.h: Obj, call and the builtins).",
             ""]
    table = []
    rules = raw.get("vjps") or {}
    for name, formulas in checked_rules(raw, ops).items():
        if formulas == DECOMPOSITION:
            continue
        entry, me, rule = entries[name], ops[name], rules[name]
        # in[]: the op's inputs, then its outputs, then their gradients (rule_names' order).
        extra = {n: f"in[{len(me.inputs) + k}]" for k, n in enumerate(rule_names(entry))}
        fns = []
        for inp in me.inputs:
            if inp not in formulas:
                fns.append("nullptr")
                continue
            fn = f"vjp_{name}__{inp}"
            lines += _Emitter(formulas[inp], ops, fn_name=fn, extra_vars=extra,
                              builtins=VJP_BUILTINS).render(rule[inp])
            fns.append(fn)
        # What the node keeps for backward, per input's formula (the recorder keeps the union
        # over the inputs that need a gradient, as PyTorch's saved variables): the inputs and
        # outputs it reads, and of an input read only for its shape/dtype/place (meta) not
        # the data. multiply(x, c) with c a constant keeps neither x nor its storage.
        data_reads, meta_reads, out_reads = [], [], 0
        for k, inp in enumerate(me.inputs):
            used, data = _names_read([formulas[inp]]) if inp in formulas else (set(), set())
            data_reads.append(sum(1 << j for j, i in enumerate(me.inputs) if i in data))
            meta_reads.append(sum(1 << j for j, i in enumerate(me.inputs)
                                  if i in used and i not in data))
            if any(n in used for n in rule_names(entry) if not n.startswith("grad")):
                out_reads |= 1 << k
        defaults = ", ".join(_attr_default(a) for a in me.attrs.values())
        table.append((me.id, name, fns, data_reads, meta_reads, out_reads, defaults))
    lines.append("const VjpEntry* vjp_table(int op_id) {")
    for _, name, fns, data_reads, meta_reads, out_reads, defaults in table:
        masks = [", ".join(f"{m}u" for m in ms) for ms in (data_reads, meta_reads)]
        lines.append(f"  static const VjpEntry e_{name}{{{{{', '.join(fns)}}}, {{{masks[0]}}}, "
                     f"{{{masks[1]}}}, {out_reads}u, {{{defaults}}}}};")
    lines.append("  switch (op_id) {")
    for op_id, name, *_ in table:
        lines.append(f"    case {op_id}: return &e_{name};")
    lines += ["    default: return nullptr;", "  }", "}", ""]
    # How autograd treats an op without a rule: through its decomposition (named
    # `decomposition` in vjps), an error at backward (an op with a `backward` name: its rule is
    # missing), or not at all (no gradient).
    # Only those ops.yaml names: a decomposition that makes views without ops would lose the
    # gradient silently, so each is listed after checking it is made of differentiable ops.
    through = [ops[n].id for n, r in rules.items() if r == DECOMPOSITION]
    missing = [ops[e["name"]].id for e in raw["ops"]
               if e.get("backward") and e["name"] not in rules]
    for fn, ids in (("through_decomposition_table", through), ("rule_missing_table", missing)):
        lines.append(f"bool {fn}(int op_id) {{")
        lines.append("  switch (op_id) {")
        lines += [f"    case {i}:" for i in ids]
        if ids:
            lines.append("      return true;")
        lines += ["    default: return false;", "  }", "}", ""]
    return "\n".join(lines)


def generate(yaml_path: str, out_dir: str) -> None:
    build_time.generate(render, yaml_path, out_dir, OUT_NAME)


def main(argv: list[str]) -> int:
    return build_time.main(argv, render, OUT_NAME, "gen_cpp_vjp")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
