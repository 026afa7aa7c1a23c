"""Each elementwise op's expression, from phi_ops/ops.yaml (never copied here by hand): the
primitives' `c_expr` and the composites' elementwise `native` expression, parsed from their C
form into loop IR expressions over the op's operands and attributes.

C semantics are kept: an integer literal takes the type of what it meets (`fmax_nan(x, 0)`), a
float literal the compute type (as the plugins' `(ew_ct)` casts), comparisons and logical
operators give bool, `c ? a : b` is a select, function calls are the IR's math library by name
(render/expr.py FUNCTIONS) and calls of attr-less native composites are inlined (silu calls
sigmoid). Where the C expression alone is not numpy's semantics for every dtype, the op's
expression is replaced by one helper, exactly as the CPU plugin's kernels_elementwise.c does:
floor_divide and remainder (Python's semantics, numpy's divmod for floats, 0 for an integer
division by zero), sign (NaN stays NaN), bitwise_not (logical on bool)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import yaml

from hwport.phi_ops.schema import OPS_YAML

from .loop_ir import (
    Binary,
    Call,
    Const,
    Expr,
    Select,
    Unary,
    cast,
    const,
    is_float,
)

OVERRIDES = {"floor_divide": "floor_divide(x, y)", "remainder": "remainder(x, y)",
             "sign": "sign(x)", "bitwise_not": "bitwise_not(x)", "where": "condition ? x : y"}
BOOL_FUNCTIONS = {"isnan", "isinf", "isfinite"}

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!~&|^?:(),]))")

# binary operator precedence (C's), loosest first
_PREC = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
         ("+", "-"), ("*", "/", "%")]


@dataclass(frozen=True)
class Node:
    kind: str  # num | id | call | unary | binary | ternary
    value: Any = None
    args: tuple[Node, ...] = ()


class ExprError(ValueError):
    """An ops.yaml expression this compiler cannot parse or type."""


def parse(text: str) -> Node:
    tokens: list[tuple[str, str]] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExprError(f"cannot parse {text!r} at {text[pos:]!r}")
        tokens.append((m.lastgroup or "", m.group(m.lastgroup or "")))
        pos = m.end()
    p = _Parser(tokens, text)
    node = p.ternary()
    if p.i != len(tokens):
        raise ExprError(f"trailing tokens in {text!r}")
    return node


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.t, self.i, self.text = tokens, 0, text

    def peek(self) -> str:
        return self.t[self.i][1] if self.i < len(self.t) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.t) or (want is not None and self.t[self.i][1] != want):
            raise ExprError(f"expected {want or 'more'} in {self.text!r}")
        self.i += 1
        return self.t[self.i - 1]

    def ternary(self) -> Node:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take("?")
        a = self.ternary()
        self.take(":")
        return Node("ternary", None, (cond, a, self.ternary()))

    def binary(self, level: int) -> Node:
        if level == len(_PREC):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _PREC[level] and self.t[self.i][0] == "op":
            op = self.take()[1]
            left = Node("binary", op, (left, self.binary(level + 1)))
        return left

    def unary(self) -> Node:
        if self.peek() in ("-", "!", "~", "+"):
            op = self.take()[1]
            inner = self.unary()
            return inner if op == "+" else Node("unary", op, (inner,))
        return self.primary()

    def primary(self) -> Node:
        kind, tok = self.take()
        if tok == "(":
            node = self.ternary()
            self.take(")")
            return node
        if kind == "num":
            return Node("num", tok)
        if kind == "id":
            if self.peek() == "(":
                self.take("(")
                args: list[Node] = []
                while self.peek() != ")":
                    args.append(self.ternary())
                    if self.peek() == ",":
                        self.take(",")
                self.take(")")
                return Node("call", tok, tuple(args))
            return Node("id", tok)
        raise ExprError(f"unexpected {tok!r} in {self.text!r}")


# ---- the op table --------------------------------------------------------------------------
@dataclass(frozen=True)
class OpExpr:
    name: str
    inputs: tuple[str, ...]
    tree: Node
    attrs: dict  # attr name -> {"as": scalar | value, "absent": required | lowest | highest}
    composite: bool = False  # a native composite: calls of it inline its expression


@functools.cache
def op_exprs() -> dict[str, OpExpr]:
    """Every elementwise op with a C form: name -> OpExpr."""
    with open(OPS_YAML, encoding="utf-8") as f:
        doc = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out: dict[str, OpExpr] = {}
    for op in doc["ops"]:
        name = op["name"]
        inputs = tuple(str(i) for i in op.get("inputs") or [])
        conv: dict = {}
        if name in OVERRIDES:
            text = OVERRIDES[name]
        elif op.get("kind") == "primitive" and op.get("c_expr"):
            text = op["c_expr"]
        elif op.get("kind") == "composite" and isinstance(op.get("native"), str | dict):
            spec = op["native"]
            text = spec if isinstance(spec, str) else spec["expr"]
            conv = dict(spec.get("attrs") or {}) if isinstance(spec, dict) else {}
        else:
            continue
        out[name] = OpExpr(name, inputs, parse(text), conv, op.get("kind") == "composite")
    return out


# ---- typing: C's usual conversions over the IR's dtypes -------------------------------------
_RANK = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"]


def promote(a: str, b: str) -> str:
    return a if _RANK.index(a) >= _RANK.index(b) else b


class _Lit:
    """A literal before it meets a typed operand."""

    __slots__ = ("is_float", "value")

    def __init__(self, value: float | int, is_float: bool) -> None:
        self.value, self.is_float = value, is_float


def _typed(v: Expr | _Lit, dtype: str) -> Expr:
    if isinstance(v, _Lit):
        return const(v.value, dtype)
    return cast(v, dtype)


def _unify(a: Expr | _Lit, b: Expr | _Lit, ct: str) -> tuple[Expr, Expr, str]:
    if isinstance(a, _Lit) and isinstance(b, _Lit):
        t = ct if (a.is_float or b.is_float) else "int64"
    elif isinstance(a, _Lit):
        t = b.dtype if not (a.is_float and not is_float(b.dtype)) else ct  # type: ignore[union-attr]
    elif isinstance(b, _Lit):
        t = a.dtype if not (b.is_float and not is_float(a.dtype)) else ct
    else:
        t = promote(a.dtype, b.dtype)
    return _typed(a, t), _typed(b, t), t


def _as_bool(v: Expr | _Lit) -> Expr:
    if isinstance(v, _Lit):
        return const(v.value != 0, "bool")
    if v.dtype == "bool":
        return v
    return Binary("!=", v, const(0, v.dtype), "bool")


def instantiate(op: str, operands: dict[str, Expr], attrs: dict[str, Any], ct: str) -> Expr:
    """op's expression over `operands` (each already in the compute type `ct`, or bool for a
    where condition), attrs as Python values (bool attrs fold, number attrs become constants
    of ct), float literals in ct."""
    e = op_exprs()[op]
    env: dict[str, Expr | _Lit] = dict(operands)
    for name, value in attrs.items():
        env[name] = _attr_value(e, name, value, ct)
    out = _build(e.tree, env, ct, 0)
    return _typed(out, ct) if isinstance(out, _Lit) else out


def _attr_value(e: OpExpr, name: str, value: Any, ct: str) -> Expr:
    if isinstance(value, bool):
        return const(value, "bool")
    if value is None:
        absent = (e.attrs.get(name) or {}).get("absent", "required")
        if absent == "required":
            raise ExprError(f"{e.name}: attr {name} is required")
        if is_float(ct):
            return const(float("-inf") if absent == "lowest" else float("inf"), ct)
        import numpy as np

        info = np.iinfo(ct) if ct != "bool" else None
        if info is None:
            return const(absent == "highest", "bool")
        return const(info.min if absent == "lowest" else info.max, ct)
    if not is_float(ct) and (e.attrs.get(name) or {}).get("as") == "value":
        import numpy as np

        info = np.iinfo(ct) if ct != "bool" else None
        v = float(value)
        if info is not None:  # a value of x's dtype: integers saturate
            v = min(max(v, float(info.min)), float(info.max))
            return const(int(v), ct)
        return const(v != 0, "bool")
    return const(value, ct)


def _build(n: Node, env: dict[str, Expr | _Lit], ct: str, depth: int) -> Expr | _Lit:
    if depth > 16:
        raise ExprError("native expressions inline each other in a cycle")
    if n.kind == "num":
        tok = str(n.value)
        if re.search(r"[.eE]", tok):
            return _Lit(float(tok), True)
        return _Lit(int(tok), False)
    if n.kind == "id":
        if n.value not in env:
            raise ExprError(f"unknown name {n.value!r}")
        return env[n.value]
    if n.kind == "unary":
        a = _build(n.args[0], env, ct, depth)
        if n.value == "!":
            return Unary("not", _as_bool(a), "bool")
        if isinstance(a, _Lit):
            return _Lit(-a.value if n.value == "-" else ~int(a.value), a.is_float)
        if n.value == "-":
            if a.dtype == "bool":
                a = cast(a, ct)
            return Unary("neg", a, a.dtype)
        return Unary("bnot", a, a.dtype)
    if n.kind == "ternary":
        cond = _as_bool(_build(n.args[0], env, ct, depth))
        a, b, t = _unify(_build(n.args[1], env, ct, depth), _build(n.args[2], env, ct, depth),
                         ct)
        if isinstance(cond, Const):
            return a if cond.value else b
        return Select(cond, a, b, t)
    if n.kind == "binary":
        op = n.value
        a0, b0 = _build(n.args[0], env, ct, depth), _build(n.args[1], env, ct, depth)
        if op in ("&&", "||"):
            return Binary(op, _as_bool(a0), _as_bool(b0), "bool")
        a, b, t = _unify(a0, b0, ct)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return Binary(op, a, b, "bool")
        if op in ("+", "-", "*") and t == "bool" and ct != "bool":
            a, b, t = cast(a, ct), cast(b, ct), ct
        return Binary(op, a, b, t)
    if n.kind == "call":
        fn = str(n.value)
        table = op_exprs()
        if fn in table and table[fn].composite and not table[fn].attrs:
            callee = table[fn]
            if len(callee.inputs) != len(n.args):
                raise ExprError(f"{fn} takes {len(callee.inputs)} argument(s)")
            sub: dict[str, Expr | _Lit] = {
                p: _build(a, env, ct, depth) for p, a in zip(callee.inputs, n.args, strict=True)}
            return _build(callee.tree, sub, ct, depth + 1)
        args = [_build(a, env, ct, depth) for a in n.args]
        if len(args) == 2:
            x, y, t = _unify(args[0], args[1], ct)
            typed = [x, y]
        else:
            t = ct if isinstance(args[0], _Lit) else args[0].dtype  # type: ignore[union-attr]
            typed = [_typed(a, t) for a in args]
        return Call(fn, tuple(typed), "bool" if fn in BOOL_FUNCTIONS else t)
    raise ExprError(f"unknown node {n.kind}")
