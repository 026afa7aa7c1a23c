"""ops.yaml, loaded and validated into OpDef records (cached; the file is read once)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

OPS_YAML = Path(__file__).with_name("ops.yaml")

ATTR_TYPES = {"bool", "int", "float", "str", "dtype", "ints", "floats"}
KINDS = {"primitive", "composite"}
CATEGORIES = {"unary", "binary", "ternary", "reduction", "scan", "linalg", "shape", "index",
              "creation", "random", "nn", "optimizer"}
REQUIRED = object()  # default of an attribute that has none


@dataclass(frozen=True)
class InputDef:
    name: str
    optional: bool = False  # "weight?": may be None
    variadic: bool = False  # "xs...": a list of tensors


@dataclass(frozen=True)
class AttrDef:
    name: str
    type: str
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class ApiDef:
    """The public function's parameters where they differ from the op's inputs + attrs (ops.yaml
    `api`: Paddle's names and order)."""
    params: tuple[str, ...]  # public parameter names, in order (`name` is always appended)
    rename: dict[str, str] = field(default_factory=dict)   # public -> the op's input/attr
    convert: dict[str, str] = field(default_factory=dict)  # public -> attr via phi_ops/api_args.py
    unsupported: dict[str, Any] = field(default_factory=dict)  # public -> its only accepted value
    ignored: dict[str, Any] = field(default_factory=dict)  # public -> default; any value is fine
    defaults: dict[str, Any] = field(default_factory=dict)  # public -> Paddle's default
    varargs: str | None = None  # the list parameter that also takes separate ints (reshape)
    bool_as: dict[str, str] = field(default_factory=dict)  # public -> the bool param a bool feeds

    def internal(self, public: str) -> str | None:
        """The op input/attr a public parameter feeds (None: an unsupported or ignored one)."""
        if public in self.unsupported or public in self.ignored:
            return None
        return self.rename.get(public) or self.convert.get(public) or public


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    category: str
    inputs: tuple[InputDef, ...]
    attrs: tuple[AttrDef, ...]
    outputs: tuple[InputDef, ...]
    dtypes: tuple[str, ...]
    out_dtype: str
    infer_meta: str
    reference: str
    tolerance_profile: str
    tolerance: dict[str, dict[str, float]]
    doc: str
    decompose: str | None = None
    formula: str | None = None  # the decomposition as a formula over ops (gen_cpp_decomp.py)
    backward: str | None = None
    method: bool = False
    operators: tuple[str, ...] = ()
    nn: bool = False
    c_expr: str | None = None
    kernel_key: str | None = None
    kernel: str | None = None
    kernel_dtypes: tuple[str, ...] = ()  # dtypes kernels are registered for (default: dtypes)
    api: ApiDef | None = None
    spmd: SpmdSpec | None = None  # the SPMD dim mapping (ops.yaml `spmd`; see parse_spmd)
    attr_map: dict[str, AttrDef] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_primitive(self) -> bool:
        return self.kind == "primitive"

    def key_input_index(self) -> int | None:
        """Index of the input whose dtype keys the kernel registry (None: no inputs)."""
        if not self.inputs:
            return None
        if self.kernel_key is None:
            return 0
        return [i.name for i in self.inputs].index(self.kernel_key)


class OpsYamlError(ValueError):
    """ops.yaml is malformed: the message names the op and the field."""


def _io(names: list[str]) -> tuple[InputDef, ...]:
    out = []
    for n in names:
        if n.endswith("..."):
            out.append(InputDef(n[:-3], variadic=True))
        elif n.endswith("?"):
            out.append(InputDef(n[:-1], optional=True))
        else:
            out.append(InputDef(n))
    return tuple(out)


def _api(raw: dict[str, Any] | None, inputs: tuple[InputDef, ...], attrs: list[AttrDef],
         bad: Any) -> ApiDef | None:
    if raw is None:
        return None
    api = ApiDef(params=tuple(raw.get("params") or ()), rename=dict(raw.get("rename") or {}),
                 convert=dict(raw.get("convert") or {}),
                 unsupported=dict(raw.get("unsupported") or {}),
                 ignored=dict(raw.get("ignored") or {}), defaults=dict(raw.get("defaults") or {}),
                 varargs=raw.get("varargs"), bool_as=dict(raw.get("bool_as") or {}))
    own = {i.name for i in inputs} | {a.name for a in attrs}
    unknown = set(raw) - {"params", "rename", "convert", "unsupported", "ignored", "defaults",
                          "varargs", "bool_as"}
    if unknown:
        raise bad(f"api: unknown fields {sorted(unknown)}")
    if len(set(api.params)) != len(api.params) or "name" in api.params:
        raise bad("api: params must be unique and not include `name` (always appended)")
    fed = [api.internal(p) for p in api.params]
    for p, target in zip(api.params, fed, strict=True):
        if target is not None and target not in own:
            raise bad(f"api: parameter {p!r} feeds {target!r}, which is not an input or attr")
    for key in (*api.rename, *api.unsupported, *api.ignored):
        if key not in api.params:
            raise bad(f"api: {key!r} is not in params")
    for key in (*api.convert, *api.defaults):  # these may also name a trailing op attr
        if key not in api.params and key not in own:
            raise bad(f"api: {key!r} is neither in params nor an input or attr")
    for key, target in api.bool_as.items():
        if key not in api.params or target not in api.params:
            raise bad(f"api: bool_as {key!r} -> {target!r}: both must be in params")
    if api.varargs is not None and api.varargs not in api.params:
        raise bad(f"api: varargs {api.varargs!r} is not in params")
    for a in attrs:  # what params leave out follows them and must have a default
        if a.name not in fed and a.required and a.name not in api.defaults:
            raise bad(f"api: required attr {a.name!r} is not in params")
    missing = [i.name for i in inputs if i.name not in fed and not i.optional]
    if missing:
        raise bad(f"api: required inputs {missing} are not in params")
    return api


# ---- the SPMD dim mapping (ops.yaml `spmd`; the grammar is in ops.yaml's header) ----------
SPMD_CLAUSES = {"replicate", "reduce", "permute", "reshape", "insert", "index", "vec", "swap",
                "linear", "addend"}
SPMD_SELECTORS = {"axis", "dims", "last", "pairs", "repeats"}
SPMD_REDUCE_TYPES = {"sum", "avg", "max", "min", "prod", "any", "all", "none"}
_SPMD_OPERAND = re.compile(r"^(\.\.\.)?([a-z]*)$")
_SPMD_CLAUSE = re.compile(r"^(\w+)\(([^()]*)\)(?:\s+if\s+(.+))?$")
_SPMD_COND = re.compile(r"^(?:(not)\s+)?(\w+)(?:\s*(==|!=)\s*(\w+))?$")


@dataclass(frozen=True)
class SpmdOperand:
    """One tensor of the einsum: `...` (the dims the letters leave, numpy-broadcast) and
    letters; replicated: `_` (the tensor is replicated whatever the others are)."""
    ellipsis: bool = False
    letters: str = ""
    replicated: bool = False


@dataclass(frozen=True)
class SpmdClause:
    name: str
    args: tuple[str, ...]
    cond: tuple[bool, str, str | None, str | None] | None = None  # (negated, name, op, word)


@dataclass(frozen=True)
class SpmdSpec:
    text: str
    inputs: tuple[SpmdOperand, ...]
    outputs: tuple[SpmdOperand, ...]
    clauses: tuple[SpmdClause, ...]

    @property
    def letters(self) -> set[str]:
        return {c for o in (*self.inputs, *self.outputs) for c in o.letters}


def parse_spmd(text: str, inputs: Sequence[InputDef], attrs: Sequence[AttrDef],
               outputs: Sequence[InputDef]) -> SpmdSpec:
    """An op's `spmd` string, checked against its inputs, attrs and outputs (ValueError)."""
    parts = [p.strip() for p in text.split(";")]
    if "->" not in parts[0]:
        raise ValueError(f"spmd {text!r}: the first part must be an einsum `ins->outs`")
    lhs, rhs = parts[0].split("->", 1)

    def operands(side: str, defs: Sequence[InputDef], what: str) -> tuple[SpmdOperand, ...]:
        items = [t.strip() for t in side.split(",")] if side.strip() else []
        if len(items) != len(defs):
            raise ValueError(f"spmd {text!r}: {len(items)} {what} operands for the op's "
                             f"{len(defs)} {what}s {[d.name for d in defs]}")
        out = []
        for item in items:
            if item == "_":
                out.append(SpmdOperand(replicated=True))
                continue
            m = _SPMD_OPERAND.match(item)
            if not m or len(set(m.group(2))) != len(m.group(2)):
                raise ValueError(f"spmd {text!r}: bad operand {item!r} (`_`, or an optional "
                                 "`...` then distinct lowercase letters)")
            out.append(SpmdOperand(bool(m.group(1)), m.group(2)))
        return tuple(out)

    ins = operands(lhs, inputs, "input")
    outs = operands(rhs, outputs, "output")
    in_letters = {c for o in ins for c in o.letters}
    attr_types = {a.name: a.type for a in attrs}
    in_names = [i.name for i in inputs]
    optional = {i.name for i in inputs if i.optional}
    letters = in_letters | {c for o in outs for c in o.letters}
    clauses = []
    for part in parts[1:]:
        m = _SPMD_CLAUSE.match(part)
        if not m:
            raise ValueError(f"spmd {text!r}: bad clause {part!r} (`name(args)` [if cond])")
        name, args = m.group(1), tuple(a.strip() for a in m.group(2).split(",") if a.strip())
        if name not in SPMD_CLAUSES:
            raise ValueError(f"spmd {text!r}: unknown clause {name!r} (one of "
                             f"{sorted(SPMD_CLAUSES)})")
        cond = None
        if m.group(3):
            c = _SPMD_COND.match(m.group(3).strip())
            if not c or (c.group(2) not in attr_types and c.group(2) not in optional):
                raise ValueError(f"spmd {text!r}: bad condition {m.group(3)!r} (`[not] attr`, "
                                 "`attr == word`, `attr != word`; or an optional input)")
            cond = (bool(c.group(1)), c.group(2), c.group(3), c.group(4))

        def need(ok: bool, what: str, name: str = name) -> None:
            if not ok:
                raise ValueError(f"spmd {text!r}: {name}(...): {what}")

        def selector(arg: str) -> None:
            if arg in letters:
                return
            kind, _, val = arg.partition(":")
            need(kind in SPMD_SELECTORS and (val in attr_types or val.isdigit()),
                 f"{arg!r} is neither a letter of the einsum nor a selector kind:attr with "
                 f"kind one of {sorted(SPMD_SELECTORS)}")

        if name == "replicate":
            need(bool(args), "names letters or selectors")
            for a in args:
                selector(a)
        elif name == "reduce":
            need(2 <= len(args) <= 3 and args[-1] in SPMD_REDUCE_TYPES,
                 f"takes (dims, [keepdim attr], type in {sorted(SPMD_REDUCE_TYPES)})")
            selector(args[0])
            if len(args) == 3:
                need(attr_types.get(args[1]) == "bool", f"{args[1]!r} is not a bool attr")
        elif name in ("permute", "insert"):
            need(len(args) == 1 and args[0] in attr_types, "takes one attr")
        elif name == "reshape":
            need(not args, "takes no arguments")
        elif name == "index":
            need(len(args) == 2 and args[0] in attr_types and args[1] in in_letters,
                 "takes (axis attr, the index operand's letter)")
        elif name in ("vec", "swap"):
            n = 2 if name == "vec" else 1
            need(len(args) == n and args[0] in in_names, "names an input first")
            op_letters = ins[in_names.index(args[0])].letters
            need(len(op_letters) >= 2 and (name == "swap" or args[1] in op_letters),
                 "needs an input with >= 2 letters (and vec: one of them)")
        else:  # linear, addend
            need(bool(args) and all(a in in_names for a in args), "names inputs")
        clauses.append(SpmdClause(name, args, cond))
    for o in outs:
        if not set(o.letters) <= in_letters or (o.ellipsis and not any(i.ellipsis for i in ins)):
            raise ValueError(f"spmd {text!r}: an output uses a letter or `...` no input has")
    return SpmdSpec(text, ins, outs, tuple(clauses))


def _spmd(raw: Any, inputs: tuple[InputDef, ...], attrs: list[AttrDef],
          outputs: tuple[InputDef, ...], bad: Any) -> SpmdSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise bad("spmd must be a string")
    try:
        return parse_spmd(raw, inputs, attrs, outputs)
    except ValueError as e:
        raise bad(str(e)) from None


def _parse(raw: dict[str, Any]) -> dict[str, OpDef]:
    groups: dict[str, list[str]] = raw["dtype_groups"]
    tolerances: dict[str, dict] = raw["tolerances"]
    all_dtypes = set(groups["all"])
    ops: dict[str, OpDef] = {}
    infos = None  # what formulas are checked against (built on the first formula)
    for entry in raw["ops"]:
        name = entry.get("name")

        def bad(what: str, name: str = str(name)) -> OpsYamlError:
            return OpsYamlError(f"ops.yaml: op {name!r}: {what}")

        if not name or name in ops:
            raise bad("missing or duplicate name")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise bad(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        if entry.get("category") not in CATEGORIES:
            raise bad(f"category must be one of {sorted(CATEGORIES)}")
        for required in ("infer_meta", "reference", "tolerance", "doc", "dtypes"):
            if required not in entry:
                raise bad(f"missing field {required!r}")
        def _group(value: str | list[str]) -> list[str]:
            dtypes = groups[value] if isinstance(value, str) else value
            if not set(dtypes) <= all_dtypes:
                raise bad(f"unknown dtypes {sorted(set(dtypes) - all_dtypes)}")
            return dtypes

        dtypes = _group(entry["dtypes"])
        attrs = []
        for attr_name, spec in (entry.get("attrs") or {}).items():
            if spec.get("type") not in ATTR_TYPES:
                raise bad(f"attr {attr_name!r}: type must be one of {sorted(ATTR_TYPES)}")
            attrs.append(AttrDef(attr_name, spec["type"], spec.get("default", REQUIRED)))
        profile = entry["tolerance"]
        if profile not in tolerances:
            raise bad(f"unknown tolerance profile {profile!r}")
        if kind == "composite" and not entry.get("decompose"):
            raise bad("a composite needs `decompose`")
        formula = entry.get("formula")
        if formula is not None:
            if kind != "composite" or not isinstance(formula, str):
                raise bad("`formula` is a string, and only for composites")
            # The generator's own parser: ops.yaml is checked as the C++ build will read it.
            from .codegen.gen_cpp_decomp import FormulaError, check_formula, op_infos

            infos = infos or op_infos(raw)
            try:
                check_formula(str(name), formula, infos)
            except FormulaError as e:
                raise OpsYamlError(str(e)) from None
        inputs = _io(entry.get("inputs") or [])
        kernel_key = entry.get("kernel_key")
        if kernel_key is not None and kernel_key not in [i.name for i in inputs]:
            raise bad(f"kernel_key {kernel_key!r} is not an input")
        api = _api(entry.get("api"), inputs, attrs, bad)
        op = OpDef(
            name=name,
            kind=kind,
            category=entry["category"],
            inputs=inputs,
            attrs=tuple(attrs),
            outputs=_io(entry.get("outputs") or ["out"]),
            dtypes=tuple(dtypes),
            out_dtype=str(entry.get("out_dtype", "same")),
            infer_meta=entry["infer_meta"],
            reference=entry["reference"],
            tolerance_profile=profile,
            tolerance=dict(tolerances[profile]),
            doc=entry["doc"],
            decompose=entry.get("decompose"),
            formula=formula,
            backward=entry.get("backward"),
            method=bool(entry.get("method", False)),
            operators=tuple(entry.get("operator") or ()),
            nn=bool(entry.get("nn", False)),
            c_expr=entry.get("c_expr"),
            kernel_key=kernel_key,
            kernel=entry.get("kernel"),
            kernel_dtypes=tuple(_group(entry.get("kernel_dtypes", entry["dtypes"]))),
            api=api,
            spmd=_spmd(entry.get("spmd"), inputs, attrs, _io(entry.get("outputs") or ["out"]),
                       bad),
            attr_map={a.name: a for a in attrs},
        )
        ops[name] = op
    _check_vjps(raw, infos)
    return ops


def _check_vjps(raw: dict, infos: dict | None) -> None:
    """The `vjps` section, checked by the generator's own parser (gen_cpp_vjp.py)."""
    from .codegen.gen_cpp_decomp import FormulaError, op_infos
    from .codegen.gen_cpp_vjp import checked_rules

    try:
        checked_rules(raw, infos or op_infos(raw))
    except FormulaError as e:
        raise OpsYamlError(str(e)) from None


@functools.cache
def load_ops(path: str = str(OPS_YAML)) -> dict[str, OpDef]:
    """Every op of ops.yaml by name, validated."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return _parse(raw)


@functools.cache
def dtype_groups(path: str = str(OPS_YAML)) -> dict[str, tuple[str, ...]]:
    with open(path, encoding="utf-8") as f:
        raw = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {k: tuple(v) for k, v in raw["dtype_groups"].items()}


def primitives() -> list[str]:
    """The primitive ops: a plugin implementing these runs every op."""
    return [name for name, op in load_ops().items() if op.is_primitive]
