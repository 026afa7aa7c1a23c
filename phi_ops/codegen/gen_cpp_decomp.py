"""Generates the C++ decompositions of the composite ops (runtime/src/decomp_formulas.h) from the
`formula` fields of phi_ops/ops.yaml.

    python gen_cpp_decomp.py <ops.yaml> <out_dir>

writes <out_dir>/decomp_formulas.inc (only when its content changes): one C++ function per
composite with a formula, calling the op pipeline's C++ entry for each sub-op (so sub-ops get
their native kernels and C++ rules, with no Python per sub-op), and `formula_table(op id)`.

The formula language (a subset of Python's expression syntax, parsed with `ast`):

    program   := (stmt ";")* expr                     the result (a tensor)
    stmt      := NAME "=" expr                        a let binding
               | "if" cond ":" expr                   an early result (the rest is not run)
    expr      := op "(" args ")" | NAME | number | True | False | nan | inf
               | expr ("+"|"-"|"*"|"/") expr | "-" expr
               | expr "if" cond "else" expr | "(" expr ")"
    op        := an ops.yaml op: its inputs positionally (tensors; the binary and where
                 families also take scalars; trailing optional ones may be left out: absent),
                 its attrs by keyword (scalars)
               | up(t)       float16/bfloat16 -> float32, else t (decompositions.py _up)
               | down(t, like)  t cast to like's dtype where it differs (_to)
               | bound(v, like) a clip bound in like's dtype (_int_bound for integer dtypes)
               | axes(axis, t)  [axis % t.ndim], or [] for a 0-d t (softmax's reduction axes)
               | all_axes(axis, t)  the axes of an ints attr, every axis of t where empty/None
               | count(t, axes) the number of elements those axes of t hold
               | last_axes(n, t)  t's last n axes (a normalization's)
               | dtype_of(t)    t's dtype (a dtype attr)
               | result_dtype(a, b[, c])  the dtype of a binary (ternary) op on them
               | dtype_name(t)  t's dtype as a string ("bool", "float32", ...)
               | attention_scale(scale, q)  scale, or 1/sqrt(q's last dim) where None
               | causal_mask(q, k)  [L, S] bool, j <= i (is_causal attention)
    NAME      := an input (tensor), an attr (scalar; bool, int, float or ints), a let binding
    cond      := a bool attr | attr "is" ["not"] "None" | scalar ("=="|"!=") scalar
               | empty(t) (no elements) | cond "and"/"or" cond | "not" cond

`+ - * /` on a tensor are add/subtract/multiply/divide with the other operand a scalar or a
tensor, as the Tensor operators of a Python decomposition are; on two scalars they are Python's
arithmetic at call time (constants folded here). A scalar operand of a sub-op goes to the binary
family as a Python scalar (a 0-d tensor of its weak dtype, made in C++: no `fill` dispatch).

Standalone on purpose: it runs at build time with only Python 3.11 and PyYAML
(phi_ops/schema.py imports `check_formula` from it, so ops.yaml is validated by the same parser).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field

try:
    from . import build_time  # imported as phi_ops.codegen.<gen>
except ImportError:
    import build_time  # run as a script at build time (CMake)

OUT_NAME = "decomp_formulas.inc"
# builtin -> (argument kinds, result kind)
BUILTINS = {"up": (("tensor",), "tensor"), "down": (("tensor", "tensor"), "tensor"),
            "bound": (("scalar", "tensor"), "scalar"), "axes": (("scalar", "tensor"), "scalar"),
            "all_axes": (("scalar", "tensor"), "scalar"), "count": (("tensor", "scalar"), "scalar"),
            "empty": (("tensor",), "cond"), "last_axes": (("scalar", "tensor"), "scalar"),
            "dtype_of": (("tensor",), "scalar"), "dtype_name": (("tensor",), "scalar"),
            "result_dtype": (("tensor", "tensor", "tensor?"), "scalar"),
            "attention_scale": (("scalar", "tensor"), "scalar"),
            "causal_mask": (("tensor", "tensor"), "tensor")}
NAMED_CONSTANTS = {"nan": "float('nan')", "inf": "float('inf')"}
OPERATORS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide"}
# Ops whose C++ rule takes Python scalars as inputs (gen_cpp_ops.family: binary, where).
SCALAR_INPUT_INFER = ("binary", "where")


class FormulaError(ValueError):
    """A malformed formula: the message names the op and the problem."""


@dataclass
class OpInfo:
    """What a formula needs to know of an op of ops.yaml."""
    id: int
    inputs: list[str]
    attrs: dict[str, dict]  # in the Python function's order (required first)
    scalar_inputs: bool  # its inputs may be Python scalars
    optional_inputs: tuple[str, ...] = ()  # `name?` inputs (a formula may test `is None`)


@dataclass
class Formula:
    op: str
    lets: list[tuple[str, ast.AST]]  # (name, expr); ("", ast.If): an early result
    result: ast.expr
    kinds: dict[int, str] = field(default_factory=dict)  # id(node) -> tensor | scalar | cond


def op_infos(raw: dict) -> dict[str, OpInfo]:
    out = {}
    for i, e in enumerate(raw["ops"]):
        raw_attrs = e.get("attrs") or {}
        attrs = {a: s for a, s in raw_attrs.items() if "default" not in s}
        attrs.update({a: s for a, s in raw_attrs.items() if "default" in s})
        raw_inputs = e.get("inputs") or []
        out[e["name"]] = OpInfo(i, [n.rstrip("?.") for n in raw_inputs], attrs,
                                e.get("infer_meta") in SCALAR_INPUT_INFER,
                                tuple(n for n in raw_inputs if n.endswith("?")))
    return out


def check_formula(name: str, text: str, ops: dict[str, OpInfo], *,
                  extra_names: dict[str, str] | None = None,
                  builtins: dict[str, tuple[tuple[str, ...], str]] | None = None,
                  allow_self: bool = False, what: str = "formula") -> Formula:
    """The parsed, checked formula of op `name` (FormulaError naming the op and the problem).

    extra_names: more names the formula may read (name -> kind), builtins: the builtins it may
    call (default BUILTINS), allow_self: it may call its own op (a VJP rule may: flip's is
    flip), what: how errors name the field."""
    builtins = BUILTINS if builtins is None else builtins

    def bad(problem: str) -> FormulaError:
        return FormulaError(f"ops.yaml: op {name!r}: {what}: {problem}")

    me = ops[name]
    try:
        tree = ast.parse("\n".join(s.strip() for s in text.split(";")), mode="exec")
    except SyntaxError as e:
        raise bad(f"syntax error: {e.msg}") from None
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise bad("must end with an expression (the result)")
    f = Formula(name, [], tree.body[-1].value)
    names: dict[str, str] = {i: "tensor" for i in me.inputs}
    for a, spec in me.attrs.items():
        if spec["type"] not in ("bool", "int", "float", "ints", "str") and what == "formula":
            raise bad(f"attr {a!r} of type {spec['type']} cannot be used (bool, int, float, str, "
                      "ints only)")
        names[a] = "scalar"
    names.update(extra_names or {})

    def kind(node: ast.expr) -> str:
        k = _kind(node)
        f.kinds[id(node)] = k
        return k

    def want(node: ast.expr, k: str, where: str) -> None:
        got = kind(node)
        if k == "cond" and isinstance(node, ast.Name) and me.attrs.get(node.id, {}).get(
                "type") == "bool":
            return  # a bool attr is a condition
        if got != k and not (k == "value" and got in ("tensor", "scalar")):
            raise bad(f"{where}: expected a {k}, got a {got} ({ast.unparse(node)})")

    def _kind(node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float, bool, str):
                raise bad(f"literal {node.value!r}: only numbers, strings, True and False")
            return "scalar"
        if isinstance(node, ast.List):
            for e in node.elts:
                want(e, "scalar", "a list element")
            return "scalar"
        if isinstance(node, ast.Name):
            if node.id in NAMED_CONSTANTS and node.id not in names:
                return "scalar"
            if node.id not in names:
                raise bad(f"unknown name {node.id!r} (not an input, attr or let binding)")
            return names[node.id]
        if isinstance(node, ast.BinOp):
            if type(node.op) not in OPERATORS:
                raise bad(f"operator {type(node.op).__name__} (only + - * /)")
            kl, kr = kind(node.left), kind(node.right)
            if "cond" in (kl, kr):
                raise bad(f"arithmetic on a condition ({ast.unparse(node)})")
            return "tensor" if "tensor" in (kl, kr) else "scalar"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            k = kind(node.operand)
            if k == "cond":
                raise bad(f"negation of a condition ({ast.unparse(node)})")
            return k
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            want(node.operand, "cond", "not")
            return "cond"
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                want(v, "cond", type(node.op).__name__.lower())
            return "cond"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                node.ops[0], (ast.Eq, ast.NotEq)):
            want(node.left, "scalar", "==")
            want(node.comparators[0], "scalar", "==")
            return "cond"
        if isinstance(node, ast.Compare):
            optional = {n.rstrip("?") for n in me.optional_inputs}
            if isinstance(node.left, ast.Name) and node.left.id in optional:
                pass  # `input is None`: an absent optional input
            elif isinstance(node.left, ast.Name) and node.left.id not in me.attrs:
                raise bad(f"condition {ast.unparse(node)!r}: {node.left.id!r} is not an attr "
                          f"of {name} (its attrs: {', '.join(me.attrs) or 'none'})")
            if (len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot))
                    or not isinstance(node.comparators[0], ast.Constant)
                    or node.comparators[0].value is not None
                    or not isinstance(node.left, ast.Name)
                    or (node.left.id not in me.attrs and node.left.id not in optional)):
                raise bad(f"condition {ast.unparse(node)!r}: only `attr is None` / "
                          "`attr is not None`")
            return "cond"
        if isinstance(node, ast.IfExp):
            want(node.test, "cond", "condition")
            kb, ko = kind(node.body), kind(node.orelse)
            if kb != ko:
                raise bad(f"the branches of {ast.unparse(node)!r} differ ({kb} vs {ko})")
            return kb
        if isinstance(node, ast.Call):
            return call(node)
        raise bad(f"unsupported syntax {ast.unparse(node)!r}")

    def call(node: ast.Call) -> str:
        if not isinstance(node.func, ast.Name):
            raise bad(f"call of {ast.unparse(node.func)!r}: only op names")
        fn = node.func.id
        if fn in builtins:
            sig, result = builtins[fn]
            required = sum(not k.endswith("?") for k in sig)  # "kind?": may be left out
            if not required <= len(node.args) <= len(sig) or node.keywords:
                n = str(len(sig)) if required == len(sig) else f"{required} to {len(sig)}"
                raise bad(f"{fn}() takes {n} positional arguments, got "
                          f"{len(node.args)}{' and keywords' if node.keywords else ''}")
            for a, k in zip(node.args, sig[:len(node.args)], strict=True):
                want(a, k.rstrip("?"), f"{fn}()")
            return result
        if fn not in ops:
            raise bad(f"unknown op {fn!r}")
        if fn == name and not allow_self:
            raise bad("calls its own op")
        sub = ops[fn]
        # trailing optional inputs may be left out (absent: layer_norm(x) without its affine)
        required = len(sub.inputs)
        while required and sub.inputs[required - 1] in {
                n.rstrip("?") for n in sub.optional_inputs}:
            required -= 1
        if not required <= len(node.args) <= len(sub.inputs):
            raise bad(f"{fn} takes {len(sub.inputs)} inputs ({', '.join(sub.inputs)}), got "
                      f"{len(node.args)}")
        for a in node.args:
            want(a, "value" if sub.scalar_inputs else "tensor", f"an input of {fn}")
        for kw in node.keywords:
            if kw.arg not in sub.attrs:
                raise bad(f"{fn} has no attr {kw.arg!r} (its attrs: "
                          f"{', '.join(sub.attrs) or 'none'})")
            want(kw.value, "scalar", f"{fn}'s attr {kw.arg!r}")
        missing = [a for a, s in sub.attrs.items() if "default" not in s
                   and a not in {kw.arg for kw in node.keywords}]
        if missing:
            raise bad(f"{fn} needs its attrs {missing}")
        return "tensor"

    for stmt in tree.body[:-1]:
        if isinstance(stmt, ast.If):
            if (stmt.orelse or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Expr)):
                raise bad(f"statement {ast.unparse(stmt)!r}: only `if cond: expr` (an early "
                          "result)")
            want(stmt.test, "cond", "if")
            want(stmt.body[0].value, "tensor", "an early result")
            f.lets.append(("", stmt))
            continue
        if (not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1
                or not isinstance(stmt.targets[0], ast.Name)):
            raise bad(f"statement {ast.unparse(stmt)!r}: only `name = expr` bindings")
        target = stmt.targets[0].id
        if target in names:
            raise bad(f"{target!r} is bound twice (or shadows an input or attr)")
        names[target] = kind(stmt.value)
        f.lets.append((target, stmt.value))
    want(f.result, "tensor", "the result")
    return f


# ---- C++ --------------------------------------------------------------------------------

def _fold(node: ast.expr) -> float | int | None:
    """The value of a constant expression over number literals, else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _fold(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = _fold(node.left), _fold(node.right)
        if left is None or right is None:
            return None
        return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right,
                ast.Div: left / right if right else None}[type(node.op)]
    return None


class _Emitter:
    def __init__(self, f: Formula, ops: dict[str, OpInfo], *, fn_name: str | None = None,
                 extra_vars: dict[str, str] | None = None,
                 builtins: dict[str, tuple[tuple[str, ...], str]] | None = None) -> None:
        self.f, self.ops, self.me = f, ops, ops[f.op]
        self.fn_name = fn_name or f"formula_{f.op}"
        self.builtins = BUILTINS if builtins is None else builtins
        self.lines: list[str] = []
        self.consts: list[str] = []
        self.n = 0
        self.vars: dict[str, str] = {i: f"in[{k}]" for k, i in enumerate(self.me.inputs)}
        self.vars.update({a: f"at[{k}]" for k, a in enumerate(self.me.attrs)})
        self.vars.update(extra_vars or {})

    def tmp(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def const(self, value: float | int) -> str:
        c = f"k{len(self.consts)}"
        if isinstance(value, float) and value != value:
            make = "PyFloat_FromDouble(std::numeric_limits<double>::quiet_NaN())"
        elif isinstance(value, float) and value in (float("inf"), -float("inf")):
            make = f"PyFloat_FromDouble({'-' if value < 0 else ''}HUGE_VAL)"
        elif isinstance(value, float):
            make = f"PyFloat_FromDouble({value!r})"
        else:
            make = f"PyLong_FromLongLong({value}LL)"
        self.consts.append(f"  static PyObject* const {c} = {make};  // leaked on purpose")
        return c

    def obj(self, out: list[str], var: str, expr: str) -> str:
        out.append(f"  Obj {var} = {expr};")
        out.append(f"  if (!{var}) return nullptr;")
        return f"{var}.ptr()"

    def cond(self, node: ast.expr, out: list[str]) -> str:
        """A C++ bool expression; the scalars it compares are computed into out first (so
        `and`/`or` do not short-circuit their computation: conditions are cheap)."""
        if isinstance(node, ast.Name):
            return f"({self.vars[node.id]} == Py_True)"
        if isinstance(node, ast.UnaryOp):
            return f"!{self.cond(node.operand, out)}"
        if isinstance(node, ast.BoolOp):
            op = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + op.join(self.cond(v, out) for v in node.values) + ")"
        if isinstance(node, ast.Call):  # empty(t)
            return f"is_empty({self.expr(node.args[0], out)})"
        assert isinstance(node, ast.Compare)
        if isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            left = self.expr(node.left, out)
            right = self.expr(node.comparators[0], out)
            eq = "Py_EQ" if isinstance(node.ops[0], ast.Eq) else "Py_NE"
            var = self.tmp()
            out.append(f"  const int {var} = PyObject_RichCompareBool({left}, {right}, {eq});")
            out.append(f"  if ({var} < 0) return nullptr;")
            return f"({var} == 1)"
        eq = "==" if isinstance(node.ops[0], ast.Is) else "!="
        return f"({self.vars[node.left.id]} {eq} Py_None)"

    def expr(self, node: ast.expr, out: list[str]) -> str:
        """Appends the statements computing node to out; returns a PyObject* expression."""
        k = self.f.kinds[id(node)]
        if k == "cond" and not isinstance(node, ast.Name):  # a bound condition: a Python bool
            return f"(({self.cond(node, out)}) ? Py_True : Py_False)"
        folded = _fold(node) if k == "scalar" else None
        if folded is not None:
            return self.const(folded)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return "Py_True" if node.value else "Py_False"
            if isinstance(node.value, str):
                c = f"k{len(self.consts)}"
                self.consts.append(f"  static PyObject* const {c} = "
                                   f"PyUnicode_InternFromString({node.value!r:s});"
                                   .replace("'", '"') + "  // leaked on purpose")
                return c
            return self.const(node.value)
        if isinstance(node, ast.List):
            items = [self.expr(e, out) for e in node.elts]
            return self.obj(out, self.tmp(), f"list_of({{{', '.join(items)}}})")
        if isinstance(node, ast.Name):
            if node.id not in self.vars:  # nan, inf
                return self.const(float(node.id))
            return self.vars[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, out), self.expr(node.right, out)
            if k == "scalar":
                fn = {ast.Add: "PyNumber_Add", ast.Sub: "PyNumber_Subtract",
                      ast.Mult: "PyNumber_Multiply", ast.Div: "PyNumber_TrueDivide"}
                return self.obj(out, self.tmp(), f"steal({fn[type(node.op)]}({left}, {right}))")
            return self.sub_op(OPERATORS[type(node.op)], [left, right], [], out)
        if isinstance(node, ast.UnaryOp):
            x = self.expr(node.operand, out)
            if k == "scalar":
                return self.obj(out, self.tmp(), f"steal(PyNumber_Negative({x}))")
            return self.sub_op("neg", [x], [], out)
        if isinstance(node, ast.IfExp):
            var = self.tmp()
            out.append(f"  Obj {var};")
            out.append(f"  if ({self.cond(node.test, out)}) {{")
            body: list[str] = []
            r = self.expr(node.body, body)
            out.extend("  " + s for s in body)
            out.append(f"    {var} = borrow({r});")
            out.append("  } else {")
            orelse: list[str] = []
            r = self.expr(node.orelse, orelse)
            out.extend("  " + s for s in orelse)
            out.append(f"    {var} = borrow({r});")
            out.append("  }")
            return f"{var}.ptr()"
        assert isinstance(node, ast.Call)
        fn = node.func.id
        args = [self.expr(a, out) for a in node.args]
        if fn in self.builtins:
            return self.obj(out, self.tmp(), f"{fn}({', '.join(args)})")
        sub = self.ops[fn]
        order = list(sub.attrs)
        attrs = [(order.index(kw.arg), self.expr(kw.value, out)) for kw in node.keywords]
        return self.sub_op(fn, args, attrs, out)

    def sub_op(self, fn: str, args: list[str], attrs: list[tuple[int, str]],
               out: list[str]) -> str:
        sub = self.ops[fn]
        at = ", ".join(f"{{{i}, {v}}}" for i, v in attrs)
        return self.obj(out, self.tmp(),
                        f"call({sub.id} /* {fn} */, {{{', '.join(args)}}}, {{{at}}})")

    def render(self, text: str) -> list[str]:
        body: list[str] = []
        for target, node in self.f.lets:
            if isinstance(node, ast.If):
                test = self.cond(node.test, body)
                early: list[str] = []
                r = self.expr(node.body[0].value, early)
                body.append(f"  if ({test}) {{")
                body.extend("  " + s for s in early)
                body.append(f"    return borrow({r}).release().ptr();")
                body.append("  }")
                continue
            r = self.expr(node, body)
            var = f"l_{target}"
            body.append(f"  Obj {var} = borrow({r});")
            self.vars[target] = f"{var}.ptr()"
        r = self.expr(self.f.result, body)
        head = [f"// {self.f.op}: {' '.join(text.split())}",
                f"PyObject* {self.fn_name}(PyObject* const* in, PyObject* const* at) {{",
                "  (void)in;", "  (void)at;"]
        body = _release_after_last_use(body + [f"  return borrow({r}).release().ptr();"])
        return head + self.consts + body + ["}", ""]


_DECLARED = re.compile(r"^\s*Obj (\w+)\b")


def _release_after_last_use(lines: list[str]) -> list[str]:
    """Drops each local tensor right after the last line that reads it: a rule like gelu's
    makes ten temporaries of its input's size, and C++ would keep every one alive to the end
    of the function (the peak memory of backward). A release inside a branch (the last read
    was there) is only an earlier drop on that path."""
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        m = _DECLARED.match(line)
        if m:
            last[m.group(1)] = i
        for name in set(re.findall(r"\w+", line)) & last.keys():
            last[name] = i
    after: dict[int, list[str]] = {}
    for name, i in last.items():
        line = lines[i]
        if "return borrow(" in line and "nullptr" not in line:
            continue  # the result: released by the return itself
        indent = line[:len(line) - len(line.lstrip())]
        if line.rstrip().endswith("{"):
            indent += "  "  # the read is the condition of a block: drop inside it
        after.setdefault(i, []).append(f"{indent}{name} = Obj();")
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        out.extend(after.get(i, ()))
    return out


def _default_obj(spec: dict) -> str:
    v = spec.get("default")
    if v is None:
        return "Py_None"
    if isinstance(v, list):
        if v:
            raise ValueError(f"a formula's ints attr defaults to [] or None, not {v}")
        return "PyList_New(0)"
    if isinstance(v, bool):
        return "Py_True" if v else "Py_False"
    if isinstance(v, str):
        return f'PyUnicode_InternFromString("{v}")'
    if isinstance(v, int):
        return f"PyLong_FromLongLong({v}LL)"
    return f"PyFloat_FromDouble({float(v)!r})"


def render(raw: dict) -> str:
    ops = op_infos(raw)
    lines = ["// GENERATED by phi_ops/codegen/gen_cpp_decomp.py from the `formula` fields of",
             "// phi_ops/ops.yaml at build time: do not edit. Included once, by",
             "// runtime/src/decomp_formulas.cpp (which defines Obj, call, up, down, bound).", ""]
    table = []
    for e in raw["ops"]:
        text = e.get("formula")
        if not text:
            continue
        f = check_formula(e["name"], text, ops)
        lines += _Emitter(f, ops).render(text)
        me = ops[e["name"]]
        defaults = ", ".join(_default_obj(s) for s in me.attrs.values())
        table.append((me.id, e["name"], len(me.attrs), defaults))
    lines.append("const FormulaEntry* formula_table(int op_id) {")
    for _, name, n_attrs, defaults in table:
        lines.append(f"  static const FormulaEntry e_{name}{{formula_{name}, {n_attrs}"
                     + f", {{{defaults}}}}};")
    lines.append("  switch (op_id) {")
    for op_id, name, _, _ in table:
        lines.append(f"    case {op_id}: return &e_{name};")
    lines += ["    default: return nullptr;", "  }", "}", ""]
    return "\n".join(lines)


def generate(yaml_path: str, out_dir: str) -> None:
    build_time.generate(render, yaml_path, out_dir, OUT_NAME)


def main(argv: list[str]) -> int:
    return build_time.main(argv, render, OUT_NAME, "gen_cpp_decomp")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
