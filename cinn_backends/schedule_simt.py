"""The SIMT schedule (GPU-like targets: OpenCL, CUDA, a vendor's): an elementwise group maps one
element to one thread (grid = ceil(elements / G) groups of G threads); a reduction group maps
one row to one group: each thread accumulates a strided slice of the row, the group combines
the partials with a tree through local memory (log2 G steps, a barrier each), every thread
reads the row's result and writes its strided slice of the row's elements; a reduction over
other than the innermost axes gives each thread one (row, column) and its own walk over the
reduced axes (coalesced, no group reduction). G is a power of two fixed in the source (the
target's max group size, at most 256). A sub-group shuffle path for
the last steps where the target has shuffles is not built yet."""

from __future__ import annotations

from dataclasses import dataclass

from .analysis import combine
from .group_spec import COL, INNER, ROW, GroupSpec, acc_var
from .loop_ir import (
    Alloc,
    Barrier,
    Binary,
    Expr,
    For,
    If,
    Kernel,
    Let,
    Load,
    Local,
    Reduce,
    Stmt,
    Store,
    Var,
    add,
    const,
    div,
    mod,
    mul,
    sub,
)
from .rewrite import Namer, cse, hoist, substitute
from .target import TargetInfo


@dataclass(frozen=True)
class SimtPlan:
    reduction: bool
    group: int
    columns: bool = False  # a thread per (row, column), no group reduction

    def launch(self, rows: int, inner: int, cols: int = 1) -> tuple[int, int]:
        """(grid, group) along x."""
        if self.columns:
            return max(0, -(-(rows * cols) // self.group)), self.group
        if self.reduction:
            return rows, self.group
        total = rows * inner
        return max(0, -(-total // self.group)), self.group


def group_size(target: TargetInfo, reduction: bool) -> int:
    cap = min(256, max(1, target.max_group_size))
    if reduction and target.local_memory_bytes:
        cap = min(cap, max(1, target.local_memory_bytes // 64))
    g = 1
    while g * 2 <= cap:
        g *= 2
    return g


def schedule_simt(spec: GroupSpec, target: TargetInfo) -> tuple[Kernel, SimtPlan]:
    if spec.col_dims:
        return _columns(spec, target)
    g_size = group_size(target, spec.reduction)
    plan = SimtPlan(spec.reduction, g_size)
    grp, tid = Var("g"), Var("tid")
    if spec.reduction:
        body = [Let(ROW, grp), *_row_body(spec, tid, g_size)]
    else:
        body = _elementwise(spec, grp, tid, g_size)
    thread = For(tid, const(0), const(g_size), "thread", body, axis=0)
    outer = For(grp, const(0), Var("grid_x"), "group", [thread], axis=0)
    return Kernel(spec.name, spec.buffers, list(spec.dims), [outer], simt=True,
                  group_size=(g_size, 1, 1)), plan


def _elementwise(spec: GroupSpec, grp: Var, tid: Var, g: int) -> list[Stmt]:
    f = Var("f")
    exprs: list[Expr] = []
    for w in spec.element_writes:
        exprs += [w.index, w.value]
    lets, exprs = cse(exprs, Namer("t"))
    stores: list[Stmt] = [Store(w.buf, exprs[2 * i], exprs[2 * i + 1])
                          for i, w in enumerate(spec.element_writes)]
    inner = spec.inner
    total = mul(spec.rows, inner)
    pos: list[Stmt] = [Let(ROW, div(f, inner)), Let(INNER, mod(f, inner))] if spec.row_dims \
        else [Let(INNER, f)]
    return [Let(f, add(mul(grp, g), tid)),
            If(Binary("<", f, total, "bool"), [*pos, *lets, *stores])]


def _row_body(spec: GroupSpec, tid: Var, g: int) -> list[Stmt]:
    out: list[Stmt] = []
    hn, tn = Namer("h"), Namer("t")
    for n, phase in enumerate(spec.phases):
        acc = Var(f"acc{n}", phase.acc_dtype)
        red = f"red{n}_l"
        lets, (value,) = hoist([phase.value], {INNER.name}, hn)
        inner_lets, (value,) = cse([value], tn)
        out += lets
        out += [
            Local(acc, phase.init),
            For(INNER, tid, sub(spec.inner, tid), "serial",
                [*inner_lets, Reduce(acc, phase.op, value)], step=g),
            Alloc(red, phase.acc_dtype, g, "local"),
            Store(red, tid, acc),
            Barrier(),
        ]
        s = g // 2
        while s >= 1:
            both = combine(phase.op, Load(red, tid, phase.acc_dtype),
                           Load(red, add(tid, s), phase.acc_dtype))
            out += [If(Binary("<", tid, const(s), "bool"), [Store(red, tid, both)]), Barrier()]
            s //= 2
        total = Load(red, const(0), phase.acc_dtype)
        final = total if phase.finalize is None else substitute(
            phase.finalize, {acc_var(phase.acc_dtype): total})
        out.append(Let(phase.result, final))
    if spec.element_writes:
        exprs: list[Expr] = []
        for w in spec.element_writes:
            exprs += [w.index, w.value]
        lets, exprs = hoist(exprs, {INNER.name}, hn)
        inner_lets, exprs = cse(exprs, tn)
        stores: list[Stmt] = [Store(w.buf, exprs[2 * i], exprs[2 * i + 1])
                              for i, w in enumerate(spec.element_writes)]
        out += [*lets, For(INNER, tid, sub(spec.inner, tid), "serial", [*inner_lets, *stores],
                           step=g)]
    if spec.row_writes:
        lets, vals = cse([w.value for w in spec.row_writes], tn)
        out.append(If(Binary("==", tid, const(0), "bool"), [
            *lets, *[Store(w.buf, w.index, v) for w, v in zip(spec.row_writes, vals,
                                                                strict=True)]]))
    return out


def _columns(spec: GroupSpec, target: TargetInfo) -> tuple[Kernel, SimtPlan]:
    """A reduction over other than the innermost axes: one thread per (row, column), walking
    the reduced axes itself (neighbouring threads read neighbouring columns: coalesced)."""
    g = group_size(target, False)
    grp, tid, f = Var("g"), Var("tid"), Var("f")
    hn, tn = Namer("h"), Namer("t")
    body: list[Stmt] = [Let(ROW, div(f, spec.cols)), Let(COL, mod(f, spec.cols))]
    for n, phase in enumerate(spec.phases):
        acc = Var(f"acc{n}", phase.acc_dtype)
        lets, (value,) = hoist([phase.value], {INNER.name}, hn)
        inner_lets, (value,) = cse([value], tn)
        final = acc if phase.finalize is None else substitute(
            phase.finalize, {acc_var(phase.acc_dtype): acc})
        body += [*lets, Local(acc, phase.init),
                 For(INNER, const(0), spec.inner, "serial",
                     [*inner_lets, Reduce(acc, phase.op, value)]),
                 Let(phase.result, final)]
    if spec.element_writes:
        exprs: list[Expr] = []
        for w in spec.element_writes:
            exprs += [w.index, w.value]
        lets, exprs = hoist(exprs, {INNER.name}, hn)
        inner_lets, exprs = cse(exprs, tn)
        body += [*lets, For(INNER, const(0), spec.inner, "serial", [
            *inner_lets, *[Store(w.buf, exprs[2 * i], exprs[2 * i + 1])
                           for i, w in enumerate(spec.element_writes)]])]
    if spec.row_writes:
        lets, vals = cse([e for w in spec.row_writes for e in (w.index, w.value)], tn)
        body += [*lets, *[Store(w.buf, vals[2 * i], vals[2 * i + 1])
                          for i, w in enumerate(spec.row_writes)]]
    total = mul(spec.rows, spec.cols)
    thread = For(tid, const(0), const(g), "thread", [
        Let(f, add(mul(grp, g), tid)), If(Binary("<", f, total, "bool"), body)], axis=0)
    outer = For(grp, const(0), Var("grid_x"), "group", [thread], axis=0)
    return Kernel(spec.name, spec.buffers, list(spec.dims), [outer], simt=True,
                  group_size=(g, 1, 1)), SimtPlan(True, g, columns=True)
