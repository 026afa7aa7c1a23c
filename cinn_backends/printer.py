"""A readable text form of the loop IR (HWPORT_PRINT_IR, debugging, test failure messages)."""

from __future__ import annotations

from .loop_ir import (
    Alloc,
    Assign,
    Barrier,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    For,
    If,
    Kernel,
    Let,
    Load,
    Local,
    Reduce,
    Select,
    ShuffleXor,
    Stmt,
    Store,
    Unary,
    Var,
)

_UNARY = {"neg": "-", "not": "!", "bnot": "~"}


def print_expr(e: Expr) -> str:
    if isinstance(e, Const):
        if e.dtype == "int64":
            return str(e.value)
        return f"{e.value!r}:{e.dtype}"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Unary):
        return f"{_UNARY[e.op]}({print_expr(e.a)})"
    if isinstance(e, Binary):
        if e.op in ("min", "max"):
            return f"{e.op}({print_expr(e.a)}, {print_expr(e.b)})"
        return f"({print_expr(e.a)} {e.op} {print_expr(e.b)})"
    if isinstance(e, Select):
        return f"select({print_expr(e.cond)}, {print_expr(e.a)}, {print_expr(e.b)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({print_expr(e.a)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(print_expr(a) for a in e.args)})"
    if isinstance(e, Load):
        return f"{e.buf}[{print_expr(e.index)}]"
    raise TypeError(f"not a loop IR expression: {e!r}")


def _stmts(body: list[Stmt], indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for s in body:
        if isinstance(s, For):
            step = f" step {s.step}" if s.step != 1 else ""
            axis = f"[{s.axis}]" if s.kind in ("parallel", "group", "thread") else ""
            out.append(f"{pad}for {s.var.name} in {s.kind}{axis}({print_expr(s.start)}, "
                       f"+{print_expr(s.extent)}{step}) {{")
            _stmts(s.body, indent + 1, out)
            out.append(pad + "}")
        elif isinstance(s, Store):
            out.append(f"{pad}{s.buf}[{print_expr(s.index)}] = {print_expr(s.value)}")
        elif isinstance(s, Let):
            out.append(f"{pad}let {s.var.name}: {s.var.dtype} = {print_expr(s.value)}")
        elif isinstance(s, Local):
            out.append(f"{pad}var {s.var.name}: {s.var.dtype} = {print_expr(s.init)}")
        elif isinstance(s, Assign):
            out.append(f"{pad}{s.var.name} = {print_expr(s.value)}")
        elif isinstance(s, Reduce):
            out.append(f"{pad}{s.var.name} {s.op}= {print_expr(s.value)}")
        elif isinstance(s, Alloc):
            out.append(f"{pad}alloc {s.scope} {s.name}: {s.dtype}[{s.size}]")
        elif isinstance(s, Barrier):
            out.append(f"{pad}barrier")
        elif isinstance(s, ShuffleXor):
            out.append(f"{pad}let {s.var.name}: {s.var.dtype} = shuffle_xor("
                       f"{print_expr(s.value)}, {s.mask})")
        elif isinstance(s, If):
            out.append(f"{pad}if {print_expr(s.cond)} {{")
            _stmts(s.then, indent + 1, out)
            if s.orelse:
                out.append(pad + "} else {")
                _stmts(s.orelse, indent + 1, out)
            out.append(pad + "}")
        else:
            raise TypeError(f"not a loop IR statement: {s!r}")


def print_kernel(k: Kernel) -> str:
    params = [f"{b.role} {b.name}: {b.dtype}*" for b in k.buffers]
    params += [f"{s.name}: {s.dtype}" for s in k.scalars]
    head = f"kernel {k.name}({', '.join(params)})"
    if k.simt:
        head += f" group{list(k.group_size)}"
    out = [head + " {"]
    _stmts(k.body, 1, out)
    out.append("}")
    return "\n".join(out)
