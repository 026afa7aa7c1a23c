"""The SIMT schedule (GPU-like targets: OpenCL, CUDA, a vendor's): an elementwise group maps one
element to one thread (grid = ceil(elements / G) groups of G threads); a reduction group maps
one row to one group: each thread accumulates a strided slice of the row, the group combines
the partials with a tree through local memory (log2 G steps, a barrier each), every thread
reads the row's result and writes its strided slice of the row's elements; a reduction over
other than the innermost axes gives each thread one (row, column) and its own walk over the
reduced axes (coalesced, no group reduction). G is a power of two fixed in the source (the
target's max group size, at most 256). Where the target has sub-group shuffles (its flag, a
renderer that writes them, a group of whole sub-groups of simd_width lanes), the partials are
combined in registers instead: an xor butterfly in each sub-group (log2 W shuffles, no
barrier), then one slot per sub-group in local memory, one barrier, and every thread combines
the G / W slots in a fixed order — one barrier per reduction instead of log2 G + 1.

Tuned variants (tuning.py, chosen by autotune.py): another group size; a group walking several
rows (a `chunk` argument, a barrier between rows); the item schedule, where each work-item
runs a CPU group's chunk of rows or elements (schedule_cpu.py's body: lane accumulators in
vectorizable loops, no barriers), the fastest on CPU OpenCL devices such as PoCL."""

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
    ScalarParam,
    ShuffleXor,
    Stmt,
    Store,
    Var,
    add,
    const,
    div,
    minimum,
    mod,
    mul,
    sub,
)
from .rewrite import Namer, cse, hoist, substitute
from .schedule_cpu import CHUNK, CpuPlan, schedule_cpu
from .target import TargetInfo
from .tuning import RULE, Tuning


@dataclass(frozen=True)
class SimtPlan:
    reduction: bool
    group: int
    columns: bool = False  # a thread per (row, column), no group reduction
    rows_per_group: int = 0  # > 0: a group walks that many rows (a `chunk` argument)
    items: CpuPlan | None = None  # the item schedule: work-items take chunks as CPU groups do

    def launch(self, rows: int, inner: int, cols: int = 1,
               compute_units: int = 1) -> tuple[int, int, list[int]]:
        """(grid, group, the schedule's trailing int64 arguments) along x."""
        if self.items is not None:
            n, chunk = self.items.launch(rows, inner, compute_units, cols)
            return -(-n // self.group), self.group, [chunk]
        if self.columns:
            return max(0, -(-(rows * cols) // self.group)), self.group, []
        if self.reduction and self.rows_per_group:
            return -(-rows // self.rows_per_group), self.group, [self.rows_per_group]
        if self.reduction:
            return rows, self.group, []
        total = rows * inner
        return max(0, -(-total // self.group)), self.group, []


def group_size(target: TargetInfo, reduction: bool, want: int = 0) -> int:
    """The rule's group size (the largest power of two up to 256 the target allows), or the
    largest power of two up to `want` it allows."""
    cap = min(want or 256, max(1, target.max_group_size))
    if reduction and target.local_memory_bytes:
        cap = min(cap, max(1, target.local_memory_bytes // 64))
    g = 1
    while g * 2 <= cap:
        g *= 2
    return g


def schedule_simt(spec: GroupSpec, target: TargetInfo,
                  tuning: Tuning = RULE) -> tuple[Kernel, SimtPlan]:
    if spec.col_dims:
        return _columns(spec, target, tuning)
    if tuning.mode == "item":
        return _items(spec, target, tuning)
    g_size = group_size(target, spec.reduction, tuning.group)
    grp, tid = Var("g"), Var("tid")
    scalars = list(spec.dims)
    lanes = _shuffle_lanes(target, g_size) if spec.reduction else 0
    if spec.reduction and tuning.rows > 1:
        plan = SimtPlan(True, g_size, rows_per_group=tuning.rows)
        lo, hi = Var("lo"), Var("hi")
        body: list[Stmt] = [
            Let(lo, mul(grp, CHUNK)), Let(hi, minimum(add(lo, CHUNK), spec.rows)),
            # the barrier: no thread starts the next row while another still reads this one's
            # results from local memory
            For(ROW, lo, sub(hi, lo), "serial",
                [*_row_body(spec, tid, g_size, lanes), Barrier()])]
        scalars.append(ScalarParam(CHUNK.name))
    elif spec.reduction:
        plan = SimtPlan(True, g_size)
        body = [Let(ROW, grp), *_row_body(spec, tid, g_size, lanes)]
    else:
        plan = SimtPlan(False, g_size)
        body = _elementwise(spec, grp, tid, g_size)
    thread = For(tid, const(0), const(g_size), "thread", body, axis=0)
    outer = For(grp, const(0), Var("grid_x"), "group", [thread], axis=0)
    return Kernel(spec.name, spec.buffers, scalars, [outer], simt=True,
                  group_size=(g_size, 1, 1)), plan


def _items(spec: GroupSpec, target: TargetInfo, tuning: Tuning) -> tuple[Kernel, SimtPlan]:
    """The item schedule: each work-item runs what a CPU group runs (schedule_cpu.py: a chunk
    of rows, each reduced over lane accumulators in a vectorizable loop, or a chunk of a flat
    group's elements), `group` work-items per group. Fast where work-items are CPU threads
    (PoCL): no barriers, no local memory, the compiler vectorizes the row loops."""
    g_size = group_size(target, False, tuning.group or 1)
    cpu, cplan = schedule_cpu(spec, target, tuning, row_cache=g_size == 1)
    (outer,) = cpu.body
    assert isinstance(outer, For) and outer.kind == "parallel"
    grp, tid = Var("wg"), Var("tid")
    thread = For(tid, const(0), const(g_size), "thread",
                 [Let(outer.var, add(mul(grp, g_size), tid)), *outer.body], axis=0)
    group = For(grp, const(0), Var("grid_x"), "group", [thread], axis=0)
    return Kernel(spec.name, spec.buffers, list(cpu.scalars), [group], simt=True,
                  group_size=(g_size, 1, 1), stream_stores=bool(tuning.stream)), \
        SimtPlan(spec.reduction, g_size, items=cplan)


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


def _shuffle_lanes(target: TargetInfo, g: int) -> int:
    """The sub-group width the reductions shuffle across, or 0 (no shuffles): the target says
    it has them, its dialect's renderer writes them, and a group is whole sub-groups."""
    w = target.simd_width
    if not target.subgroup_shuffle or w < 2 or w & (w - 1) or g % w:
        return 0
    from .targets import renderer_for  # the renderers import the IR, not the schedules

    try:
        renderer = renderer_for(target.dialect)
    except (KeyError, ValueError):
        return 0
    return w if getattr(renderer, "shuffle", False) else 0


def _combine_tree(op: str, acc: Var, red: str, tid: Var, g: int) -> tuple[list[Stmt], Expr]:
    """The group's partials combined through local memory: log2 g halving steps."""
    out: list[Stmt] = [Alloc(red, acc.dtype, g, "local"), Store(red, tid, acc), Barrier()]
    s = g // 2
    while s >= 1:
        both = combine(op, Load(red, tid, acc.dtype), Load(red, add(tid, s), acc.dtype))
        out += [If(Binary("<", tid, const(s), "bool"), [Store(red, tid, both)]), Barrier()]
        s //= 2
    return out, Load(red, const(0), acc.dtype)


def _combine_shuffled(op: str, acc: Var, red: str, tid: Var, g: int,
                      lanes: int) -> tuple[list[Stmt], Expr]:
    """The group's partials combined in registers: an xor butterfly in each sub-group of
    `lanes` (every lane ends with its sub-group's total: the combining steps commute), lane 0
    of each sub-group posts it, one barrier, and every thread folds the g / lanes posts in
    order (the same order everywhere, so all threads agree bit for bit)."""
    out: list[Stmt] = []
    cur: Expr = acc
    mask = lanes // 2
    while mask >= 1:
        other, mixed = Var(f"{red}_x{mask}", acc.dtype), Var(f"{red}_s{mask}", acc.dtype)
        out += [ShuffleXor(other, cur, mask), Let(mixed, combine(op, cur, other))]
        cur, mask = mixed, mask // 2
    posts = g // lanes
    out += [Alloc(red, acc.dtype, posts, "local"),
            If(Binary("==", mod(tid, const(lanes)), const(0), "bool"),
               [Store(red, div(tid, const(lanes)), cur)]),
            Barrier()]
    total: Expr = Load(red, const(0), acc.dtype)
    for k in range(1, posts):
        total = combine(op, total, Load(red, const(k), acc.dtype))
    return out, total


def _row_body(spec: GroupSpec, tid: Var, g: int, lanes: int = 0) -> list[Stmt]:
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
        ]
        steps, total = (_combine_shuffled(phase.op, acc, red, tid, g, lanes) if lanes
                        else _combine_tree(phase.op, acc, red, tid, g))
        out += steps
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


def _columns(spec: GroupSpec, target: TargetInfo,
             tuning: Tuning = RULE) -> tuple[Kernel, SimtPlan]:
    """A reduction over other than the innermost axes: one thread per (row, column), walking
    the reduced axes itself (neighbouring threads read neighbouring columns: coalesced)."""
    g = group_size(target, False, tuning.group)
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
