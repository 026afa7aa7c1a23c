"""Generates the C++ op table of the op-call pipeline (runtime/src/pipeline_ops.h) from
phi_ops/ops.yaml.

    python gen_cpp_ops.py <ops.yaml> <out_dir>

writes <out_dir>/pipeline_ops.inc (only when its content changes, so builds stay incremental):
one `OpSpec` per op of ops.yaml, in file order (the op's id is its index; the generated
phi_ops/functional.py passes the same ids), with its inputs (optional / variadic), attributes
(kind, default; in the Python function's order), category, infer_meta rule, kind, out_dtype
rule, dtypes and kernel dtypes as bit masks, the Paddle keyword names the Python function
takes, and the pipeline family that serves it in C++ (`family` below; ops of no family always
take the Python path).

Standalone on purpose: it runs at build time with only Python 3.11 and PyYAML (gen_python imports
`family` from it, so the Python functions and the C++ table agree on what is covered).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

try:
    from . import build_time  # imported as phi_ops.codegen.<gen>
except ImportError:
    import build_time  # run as a script at build time (CMake)

OUT_NAME = "pipeline_ops.inc"
# HWP_DType order (runtime/include/hwport/types.h): bit i of a mask is dtype i.
DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
ATTR_KINDS = {"bool": "Bool", "int": "Int", "float": "Float", "str": "Str", "dtype": "DType",
              "ints": "Ints", "floats": "Floats"}
OUT_RULES = {"same": "Same", "bool": "Bool", "int64": "Int64", "float": "Float", "sum": "Sum"}


def family(category: str, infer_meta: str, attrs: dict[str, str], out_dtype: str,
           inputs: Sequence[str] = ("x",)) -> str | None:
    """The C++ rule family serving an op, from its ops.yaml fields (`attrs`: name -> type;
    `inputs` as ops.yaml writes them, "weight?" optional; None: the Python path).

    unary      the `unary` rule on one input whose attributes are bools, floats, an int
               `axis` (normalized as the Python rule does) or the dtype attribute its
               out_dtype names (cast); integer inputs of float-only ops of category unary
               compute in float32
    norm       the `unary` rule on x and optional affine inputs with normalized_ndim and
               epsilon (layer_norm, rms_norm: their shape and dtype checks)
    binary     elementwise ops of two inputs with broadcasting and promotion (category and rule
               `binary`: arithmetic, comparisons, logical and bitwise ops), Python scalars
               included
    reduce     reductions (category `reduction`, rule `reduce`): axis, keepdim, sum's dtype,
               and bool attributes the kernel reads as they are (var's unbiased)
    where      the `where` rule: condition, x, y broadcast, x and y promoted (scalars included)
    matmul     the `matmul` rule (transposes, 1-D operands, batch broadcasting)
    concat     the `concat` rule (inputs promoted, axis normalized)
    reshape    the `reshape` rule (-1 resolved; a view where the layout allows, else a copy)
    flatten    the `flatten` rule (a reshape)
    transpose, squeeze, unsqueeze, expand
               their rules (views)
    slice, split
               their rules (views: split returns a list of them)
    arg_reduce the `arg_reduce` rule (argmax, argmin: an optional axis, keepdim)
    scan       the `scan` rule (cumsum, cumprod: an optional axis)
    gather, take_along_axis
               their rules (gather, index_select; take_along_axis): x, an int index, axis;
               index values checked on the device
    creation   the `creation` rule (fill, full, zeros, ones: shape, at most one value, dtype;
               `place=`)
    arange     the `arange` rule (start, end, step, dtype; `place=`)
    tile       the `tile` rule (repeats >= 0, padded to x's dims); a composite, run in C++
               with the device's own kernel only (else the Python path decomposes it)
    roll       the `unary` rule of a shape op with ints shifts and axis (each axis normalized,
               repeats kept; as many shifts as axes, or one without axes); a composite, run
               in C++ with the device's own kernel only
    topk       the `topk` rule (k, axis, largest: values and int64 indices); a composite,
               run in C++ with the device's two-output kernel, else its decomposition's
               kernels (argsort, the first k, take_along_axis)
    random     the `creation` rule of category random (uniform, normal: shape, two floats,
               seed, offset, dtype; `place=`); normal with the device's own kernel, else the
               Python path decomposes it
    dropout    the `unary` rule with p in [0, 1], training, seed and offset
    rotary     the `unary` rule of x, cos, sin (last dim of x even, cos and sin broadcast to
               x)
    scatter    the `scatter` rule (x, an int index, updates cast to x's dtype; axis, reduce);
               index values checked on the device
    attention  the `attention` rule (query, key, value, attn_mask?; is_causal, scale) and
    cross_entropy
               the `cross_entropy` rule (logits, int label; reduction, ignore_index);
               dropout, rotary, attention, cross_entropy: composites, run with the device's
               own kernel, else the Python path decomposes them (after the C++ checks)
    eye, linspace
               their rules (n, m?, dtype; start, stop, num, dtype; `place=`); composites,
               run in C++ with the device's own kernel only (else the Python path
               decomposes them)
    flip       the `unary` rule of a shape op with one ints axis (a view: negative strides)
    pad        the `pad` rule (pad pairs, a value of x's dtype)
    linear, embedding
               their rules (x @ weight + bias?; rows of weight for an int index)
    stack, matrix_unary (tril, triu), like (full_like, zeros_like, ones_like)
               their rules; composites, run in C++ with the device's own kernel only (like:
               else the one fill kernel of its decomposition)
    grad_like  backward ops (softmax_grad: out, grad, axis; layer_norm_grad, rms_norm_grad: x,
               grad, weight?, normalized_ndim, epsilon): grad of the first input's shape and
               dtype, a weight of the normalized shape; the device's own kernel, else the
               C++ formula
    cross_entropy_grad
               logits [N, C], an int label [N], grad of cross_entropy's output; the device's own
               kernel where every label is in [0, C) (else the Python path checks them), the
               C++ formula where the device has none"""
    out_attr = out_dtype[5:] if out_dtype.startswith("attr:") else None
    inputs = list(inputs)
    if infer_meta == "unary" and inputs == ["x"] and all(
            t in ("bool", "float") or (n == "axis" and t == "int")
            or (n == out_attr and t == "dtype") for n, t in attrs.items()):
        return "unary"
    if infer_meta == "unary" and inputs[:1] == ["x"] and len(inputs) > 1 and all(
            i.endswith("?") for i in inputs[1:]) and attrs == {
            "normalized_ndim": "int", "epsilon": "float"}:
        return "norm"
    if category == "binary" and infer_meta == "binary" and not attrs:
        return "binary"
    if infer_meta == "where" and not attrs:
        return "where"
    if category == "reduction" and infer_meta == "reduce" and set(attrs.values()) <= {
            "ints", "bool", "dtype"} and out_attr is None:
        return "reduce"
    if infer_meta == "matmul" and set(attrs) == {"transpose_x", "transpose_y"}:
        return "matmul"
    if infer_meta == "concat" and attrs == {"axis": "int"} and len(inputs) == 1:
        return "concat"
    if infer_meta in ("reshape", "transpose", "squeeze", "unsqueeze", "expand") and \
            inputs == ["x"] and len(attrs) == 1:
        return infer_meta
    if infer_meta == "flatten" and inputs == ["x"] and set(attrs) == {"start_axis", "stop_axis"}:
        return infer_meta
    if infer_meta == "slice" and inputs == ["x"] and attrs == {
            "axes": "ints", "starts": "ints", "ends": "ints", "strides": "ints"}:
        return "slice"
    if infer_meta == "split" and inputs == ["x"] and attrs == {"sections": "ints", "axis": "int"}:
        return "split"
    if infer_meta == "arg_reduce" and inputs == ["x"] and attrs == {"axis": "int",
                                                                     "keepdim": "bool"}:
        return "arg_reduce"
    if infer_meta == "scan" and inputs == ["x"] and attrs == {"axis": "int"}:
        return "scan"
    if infer_meta in ("gather", "take_along_axis") and inputs == ["x", "index"] and \
            attrs == {"axis": "int"}:
        return infer_meta
    if infer_meta == "creation" and not inputs and attrs.get("shape") == "ints" and \
            attrs.get("dtype") == "dtype" and len(attrs) <= 3 and \
            list(attrs.values()).count("float") == len(attrs) - 2:
        return "creation"
    if category == "shape" and infer_meta == "unary" and inputs == ["x"] and \
            attrs == {"axis": "ints"}:
        return "flip"
    if infer_meta == "pad" and inputs == ["x"] and attrs == {"pad": "ints", "value": "float"}:
        return "pad"
    if infer_meta == "stack" and inputs == ["xs..."] and attrs == {"axis": "int"}:
        return "stack"
    if infer_meta == "matrix_unary" and inputs == ["x"] and attrs == {"diagonal": "int"}:
        return "matrix_unary"
    if infer_meta == "like" and inputs == ["x"] and attrs.get("dtype") == "dtype" and \
            set(attrs.values()) <= {"float", "dtype"} and len(attrs) <= 2:
        return "like"
    if infer_meta == "linear" and inputs == ["x", "weight", "bias?"] and not attrs:
        return "linear"
    if infer_meta == "embedding" and inputs == ["index", "weight"] and not attrs:
        return "embedding"
    if infer_meta == "arange" and not inputs and attrs == {
            "start": "float", "end": "float", "step": "float", "dtype": "dtype"}:
        return "arange"
    if infer_meta == "tile" and inputs == ["x"] and attrs == {"repeats": "ints"}:
        return "tile"
    if category == "shape" and infer_meta == "unary" and inputs == ["x"] and \
            attrs == {"shifts": "ints", "axis": "ints"}:
        return "roll"
    if infer_meta == "topk" and inputs == ["x"] and attrs == {"k": "int", "axis": "int",
                                                               "largest": "bool"}:
        return "topk"
    if category == "random" and infer_meta == "creation" and not inputs and \
            attrs.get("shape") == "ints" and attrs.get("seed") == "int" and \
            attrs.get("offset") == "int" and attrs.get("dtype") == "dtype" and \
            sorted(attrs.values()) == ["dtype", "float", "float", "int", "int", "ints"]:
        return "random"
    if infer_meta == "unary" and inputs == ["x"] and attrs == {
            "p": "float", "training": "bool", "seed": "int", "offset": "int"}:
        return "dropout"
    if infer_meta == "unary" and inputs == ["x", "cos", "sin"] and not attrs:
        return "rotary"
    if infer_meta == "scatter" and inputs == ["x", "index", "updates"] and attrs == {
            "axis": "int", "reduce": "str"}:
        return "scatter"
    if infer_meta == "attention" and inputs == ["query", "key", "value", "attn_mask?"] and \
            attrs == {"is_causal": "bool", "scale": "float"}:
        return "attention"
    if infer_meta == "cross_entropy" and inputs == ["logits", "label"] and attrs == {
            "reduction": "str", "ignore_index": "int"}:
        return "cross_entropy"
    if infer_meta == "optimizer_update" and all(t == "float" for t in attrs.values()):
        return "optimizer_update"
    if infer_meta == "cross_entropy_grad" and inputs == ["logits", "label", "grad"] and \
            attrs == {"reduction": "str", "ignore_index": "int"}:
        return "cross_entropy_grad"
    if infer_meta == "grad_like" and inputs[1:2] == ["grad"] and all(
            i.endswith("?") for i in inputs[2:]) and attrs in (
            {"axis": "int"}, {"normalized_ndim": "int", "epsilon": "float"}):
        return "grad_like"
    if infer_meta == "eye" and not inputs and attrs == {"n": "int", "m": "int", "dtype": "dtype"}:
        return "eye"
    if infer_meta == "linspace" and not inputs and attrs == {
            "start": "float", "stop": "float", "num": "int", "dtype": "dtype"}:
        return "linspace"
    return None


def _mask(dtypes: Sequence[str]) -> str:
    bits = 0
    for d in dtypes:
        bits |= 1 << DTYPES.index(d)
    return f"0x{bits:03x}u"


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _default(kind: str, spec: dict) -> str:
    """AttrDefault{has_default, is_none, b, i, f, is_float}."""
    if "default" not in spec:
        return "{false, false, false, 0, 0.0, false}"
    v = spec["default"]
    if v is None or (kind == "ints" and v == []):
        return "{true, true, false, 0, 0.0, false}"
    if isinstance(v, bool):
        return f"{{true, false, {str(v).lower()}, 0, 0.0, false}}"
    if isinstance(v, int):
        return f"{{true, false, false, {v}LL, {float(v)!r}, false}}"
    if isinstance(v, float):
        return f"{{true, false, false, 0, {v!r}, true}}"
    if kind == "dtype" and v in DTYPES:  # a dtype default by its index (HWP_DType)
        return f"{{true, false, false, {DTYPES.index(v)}LL, 0.0, false}}"
    return "{true, false, false, 0, 0.0, false}"  # str/list defaults: Python-only ops


def _group(groups: dict, value: str | list[str]) -> list[str]:
    return list(groups[value]) if isinstance(value, str) else list(value)


def render(raw: dict) -> str:
    groups = raw["dtype_groups"]
    lines = ["// GENERATED by phi_ops/codegen/gen_cpp_ops.py from phi_ops/ops.yaml at build time:",
             "// do not edit. Included once, by runtime/src/pipeline_ops.cpp.", ""]
    rows = []
    for op_id, e in enumerate(raw["ops"]):
        name = e["name"]
        inputs = e.get("inputs") or []
        # Attributes in the Python function's order (gen_python.signature): required first.
        raw_attrs = e.get("attrs") or {}
        attrs = {a: s for a, s in raw_attrs.items() if "default" not in s}
        attrs.update({a: s for a, s in raw_attrs.items() if "default" in s})
        in_rows = []
        for i in inputs:
            variadic, optional = i.endswith("..."), i.endswith("?")
            base = i[:-3] if variadic else i[:-1] if optional else i
            in_rows.append(f"{{{_cstr(base)}, {str(optional).lower()}, {str(variadic).lower()}}}")
        attr_rows = [f"{{{_cstr(a)}, AttrKind::{ATTR_KINDS[s['type']]}, {_default(s['type'], s)}, "
                     f"{str(a == 'axis' and s['type'] == 'int').lower()}}}"
                     for a, s in attrs.items()]
        if in_rows:
            lines.append(f"const InputSpec kInputs_{name}[] = {{{', '.join(in_rows)}}};")
        if attr_rows:
            lines.append(f"const AttrSpec kAttrs_{name}[] = {{{', '.join(attr_rows)}}};")
        rule = str(e.get("out_dtype", "same"))
        fam = family(e["category"], e["infer_meta"], {a: s["type"] for a, s in attrs.items()},
                     rule, inputs)
        dtypes = _group(groups, e["dtypes"])
        # phi_ops/dispatch.py _promote_unsupported: integer inputs of float-only unary ops
        # compute in float32
        ints_as_float32 = e["category"] == "unary" and all(
            d.startswith(("float", "bfloat")) for d in dtypes)
        kernel_dtypes = _group(groups, e.get("kernel_dtypes", e["dtypes"]))
        out_rule = OUT_RULES.get(rule, "Attr")
        # attr:<name>: the index of that attribute (-1: another rule)
        out_attr = list(attrs).index(rule[5:]) if rule.startswith("attr:") else -1
        keywords = [n.rstrip("?.") for n in inputs] + list(attrs)
        rows.append(
            f"    {{{op_id}, {_cstr(name)}, {_cstr(e['category'])}, {_cstr(e['infer_meta'])}, "
            f"Family::{(fam or 'none').capitalize()}, {str(e['kind'] == 'primitive').lower()}, "
            f"{str(ints_as_float32).lower()}, "
            f"OutRule::{out_rule}, {out_attr}, {_mask(dtypes)}, {_mask(kernel_dtypes)}, "
            f"{len(inputs)}, {f'kInputs_{name}' if inputs else 'nullptr'}, "
            f"{len(attrs)}, {f'kAttrs_{name}' if attrs else 'nullptr'}, "
            f"{_cstr(', '.join(keywords))}}},")
    lines.append("")
    lines.append("const OpSpec kOpTable[] = {")
    lines += rows
    lines.append("};")
    lines.append(f"constexpr int kNumOpSpecs = {len(rows)};")
    return "\n".join(lines) + "\n"


def generate(yaml_path: str, out_dir: str) -> None:
    build_time.generate(render, yaml_path, out_dir, OUT_NAME)


def main(argv: list[str]) -> int:
    return build_time.main(argv, render, OUT_NAME, "gen_cpp_ops")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
