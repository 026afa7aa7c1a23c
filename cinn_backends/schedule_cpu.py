"""The vector-CPU schedule (non-SIMT targets, dialect c99): the grid splits the rows (or, for a
flat elementwise group, the elements) into chunks, about 4 per compute unit; each row runs its
reduction phases over W-lane partial accumulators (a vectorized lane loop, lanes combined in a
fixed order, then the tail: the same result on every vector width the compiler picks), then
its element writes as one vectorized loop (the compiler's vector loop handles the tail).
Row-invariant subexpressions (the normalizer of RMSNorm, a keepdim operand) are computed
once per row; repeated subexpressions once per element."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .analysis import combine
from .group_spec import COL, INNER, ROW, GroupSpec, Phase, acc_var
from .loop_ir import (
    Alloc,
    Assign,
    Binary,
    Call,
    Expr,
    For,
    If,
    Kernel,
    Let,
    Load,
    Local,
    Reduce,
    ScalarParam,
    Stmt,
    Store,
    Var,
    add,
    children,
    const,
    div,
    free_vars,
    minimum,
    mod,
    mul,
    nodes,
    sub,
)
from .rewrite import Namer, cse, hoist, substitute, transform
from .target import TargetInfo
from .tuning import RULE, Tuning

# float32 elements of a row kept on the stack between its last phase and its writes (32 KiB;
# fewer elements of a wider type)
ROW_CACHE = 8192
CHUNK = Var("chunk")  # rows (or elements) per group: a kernel argument set at launch
GRID = Var("grid_x")


@dataclass(frozen=True)
class CpuPlan:
    """What the launch computes: grid = ceil(total / chunk) groups of `chunk` rows/elements
    (or, for a column reduction, blocks of col_block columns of a row)."""

    flat: bool
    groups_per_unit: int = 4
    align: int = 64  # a flat chunk is a multiple of this many elements
    col_block: int = 0

    def launch(self, rows: int, inner: int, compute_units: int,
               cols: int = 1) -> tuple[int, int]:
        total = inner if self.flat else rows
        if self.col_block:
            total = rows * -(-cols // self.col_block)
        if total <= 0:
            return 0, 1
        want = max(1, compute_units * self.groups_per_unit)
        chunk = -(-total // want)
        if self.flat:
            chunk = -(-chunk // self.align) * self.align
        grid = -(-total // chunk)
        return grid, chunk


def lanes_for(target: TargetInfo, dtype: str) -> int:
    w = max(1, target.preferred_vector_width)
    return max(1, w // 2) if dtype == "float64" else w


def schedule_cpu(spec: GroupSpec, target: TargetInfo, tuning: Tuning = RULE,
                 row_cache: bool = True) -> tuple[Kernel, CpuPlan]:
    """tuning.per_unit: groups per compute unit (a launch-time choice; 0: the rule's 4);
    tuning.vector: the loops' lanes instead of the target's preferred vector width;
    tuning.stream: the element loops' output stores non-temporal where the renderer can;
    row_cache=False: no stack row cache (the SIMT item schedule with several work-items)."""
    per_unit = tuning.per_unit or CpuPlan.groups_per_unit
    if tuning.vector:
        target = replace(target, preferred_vector_width=tuning.vector)
    if spec.col_dims:
        kernel, plan = _column_kernel(spec, target)
        return kernel, replace(plan, groups_per_unit=per_unit)
    flat = not spec.row_dims and not spec.reduction
    plan = CpuPlan(flat=flat, groups_per_unit=per_unit)
    g = Var("g")
    lo, hi = Var("lo"), Var("hi")
    total = spec.inner if flat else spec.rows
    head: list[Stmt] = [Let(lo, mul(g, CHUNK)), Let(hi, minimum(add(lo, CHUNK), total))]
    if flat:
        body = _element_loop(spec, target, lo, sub(hi, lo), Namer("t"), Namer("h"))
        row_loop: list[Stmt] = body
    else:
        row_loop = [For(ROW, lo, sub(hi, lo), "serial", _row_body(spec, target, row_cache))]
    outer = For(g, const(0), GRID, "parallel", head + row_loop, axis=0)
    scalars = [*spec.dims, ScalarParam(CHUNK.name)]
    return Kernel(spec.name, spec.buffers, scalars, [outer],
                  stream_stores=bool(tuning.stream)), plan


def _row_body(spec: GroupSpec, target: TargetInfo, row_cache: bool = True) -> list[Stmt]:
    out: list[Stmt] = []
    hn = Namer("h")
    tn = Namer("t")
    shared = _shared_with_writes(spec) if row_cache else None
    last = len(spec.phases) - 1 if shared is not None else len(spec.phases)
    for n, phase in enumerate(spec.phases[:last]):
        out += _phase(n, phase, spec, target, hn, tn)
    stash = _stash(spec, shared) if shared is not None else None
    if stash is not None:
        # the output the one element write stores holds the shared value from the last phase
        # until the writes rescale it in place (no row cache, no row length limit)
        buf, index = stash
        phase = spec.phases[last]
        out += _phase(last, phase, spec, target, hn, tn, (shared, buf, index))
        out += _element_loop(spec, target, const(0), spec.inner, tn, hn,
                             {shared: Load(buf, index, shared.dtype)})
    elif shared is not None:
        # the last phase and the writes compute one costly element value (softmax's exp):
        # kept in a row cache when the row fits, else computed twice
        cache, fits = Var("rowcache"), Var("fits", "bool")
        cached = Load(cache.name, INNER, shared.dtype)
        phase = spec.phases[last]
        cap = ROW_CACHE * 4 // (8 if shared.dtype in ("float64", "int64") else 4)
        then: list[Stmt] = [Alloc(cache.name, shared.dtype, cap)]
        then += _phase(last, phase, spec, target, hn, tn, (shared, cache.name, INNER),
                       assign=True)
        then += _element_loop(spec, target, const(0), spec.inner, tn, hn, {shared: cached})
        orelse = _phase(last, phase, spec, target, hn, tn, assign=True)
        orelse += _element_loop(spec, target, const(0), spec.inner, tn, hn)
        out += [Local(phase.result, phase.init),  # assigned in either branch
                Let(fits, Binary("<=", spec.inner, const(cap), "bool")),
                If(fits, then, orelse)]
    elif spec.element_writes:
        out += _element_loop(spec, target, const(0), spec.inner, tn, hn)
    if spec.row_writes:
        exprs = [w.value for w in spec.row_writes]
        lets, vals = cse(exprs, tn)
        out += lets
        out += [Store(w.buf, w.index, v) for w, v in zip(spec.row_writes, vals, strict=True)]
    return out


def _stash(spec: GroupSpec, shared: Expr) -> tuple[str, Expr] | None:
    """(buffer, index) of the one element write, when it can hold the shared value between the
    last phase and the writes: its buffer has the value's dtype, and its value, with the
    shared value read back from it, reads no other element of the row (so an output that
    shares storage with an input is still read before it is overwritten)."""
    if len(spec.element_writes) != 1:
        return None
    w = spec.element_writes[0]
    buf = next((b for b in spec.buffers if b.name == w.buf), None)
    if buf is None or buf.dtype != shared.dtype or INNER.name not in free_vars(w.index):
        return None
    marker = Var("stash_marker", shared.dtype)
    value = transform(w.value, lambda e: marker if e == shared else None)
    if any(isinstance(x, Load) and INNER.name in free_vars(x.index) for x in nodes([value])):
        return None
    return w.buf, w.index


def _element_loop(spec: GroupSpec, target: TargetInfo, start: Expr, extent: Expr,
                  tn: Namer, hn: Namer, replace: dict[Expr, Expr] | None = None
                  ) -> list[Stmt]:
    exprs: list[Expr] = []
    for w in spec.element_writes:
        value = w.value if not replace else transform(w.value, replace.get)
        exprs += [w.index, value]
    lets, exprs = hoist(exprs, {INNER.name}, hn)
    inner_lets, exprs = cse(exprs, tn)
    stores: list[Stmt] = [Store(w.buf, exprs[2 * i], exprs[2 * i + 1])
                          for i, w in enumerate(spec.element_writes)]
    return [*lets, For(INNER, start, extent, "vectorized", [*inner_lets, *stores])]


def _phase(n: int, phase: Phase, spec: GroupSpec, target: TargetInfo, hn: Namer,
           tn: Namer, keep: tuple[Expr, str, Expr] | None = None, assign: bool = False
           ) -> list[Stmt]:
    """One reduction phase; keep = (an element subexpression, the array it is stored in, at
    which index)."""
    w = lanes_for(target, phase.acc_dtype)
    lanes = f"lanes{n}"
    acc = Var(f"acc{n}", phase.acc_dtype)
    value = phase.value
    kept: list[Stmt] = []
    if keep is not None:
        sub_e, array, at = keep
        kv = Var(f"kept{n}", sub_e.dtype)
        value = transform(value, lambda e: kv if e == sub_e else None)
        lets0, (sub_e, at) = hoist([sub_e, at], {INNER.name}, hn)
        kept = [*lets0, Let(kv, sub_e), Store(array, at, kv)]
    lets, (value,) = hoist([value], {INNER.name}, hn)
    inner_lets, (value,) = cse([value], tn)
    lets = kept[:-2] + lets if kept else lets
    inner_lets = kept[-2:] + inner_lets if kept else inner_lets
    lane, k0 = Var(f"l{n}"), Var(f"k{n}")
    nv = Var(f"nv{n}")
    lane_value = combine(phase.op, Load(lanes, lane, phase.acc_dtype), value)
    body: list[Stmt] = [
        *lets,
        Alloc(lanes, phase.acc_dtype, w),
        For(lane, const(0), const(w), "unrolled", [Store(lanes, lane, phase.init)]),
        Let(nv, mul(div(spec.inner, w), w)),
        For(k0, const(0), nv, "serial", [
            For(lane, const(0), const(w), "vectorized",
                [Let(INNER, add(k0, lane)), *inner_lets, Store(lanes, lane, lane_value)]),
        ], step=w),
        Local(acc, phase.init),
        For(lane, const(0), const(w), "unrolled",
            [Reduce(acc, phase.op, Load(lanes, lane, phase.acc_dtype))]),
        For(INNER, nv, sub(spec.inner, nv), "serial",
            [*inner_lets, Reduce(acc, phase.op, value)]),
    ]
    final = acc if phase.finalize is None else substitute(
        phase.finalize, {acc_var(phase.acc_dtype): acc})
    body.append(Assign(phase.result, final) if assign else Let(phase.result, final))
    return body


def _shared_with_writes(spec: GroupSpec) -> Expr | None:
    """The largest per-element subexpression with a math call that the last reduction phase
    and the element writes both compute (softmax: exp(x - max)); None if there is none."""
    if not spec.phases or not spec.element_writes:
        return None
    in_writes = set(nodes([w.value for w in spec.element_writes]))
    for e in _breadth_first(spec.phases[-1].value):
        if e in in_writes and INNER.name in free_vars(e) and \
                any(isinstance(x, Call) for x in nodes([e])):
            return e
    return None


def _breadth_first(e: Expr) -> list[Expr]:
    out, seen, i = [e], {id(e)}, 0
    while i < len(out):
        for c in children(out[i]):
            if id(c) not in seen:
                seen.add(id(c))
                out.append(c)
        i += 1
    return out


COL_BLOCK = 256  # columns a group reduces at once (a vector loop over contiguous memory)


def _column_kernel(spec: GroupSpec, target: TargetInfo) -> tuple[Kernel, CpuPlan]:
    """A reduction over other than the innermost axes: each group takes blocks of up to
    COL_BLOCK contiguous columns of a row; per block, every phase walks the reduced axes once,
    accumulating all its columns in a vector loop (one accumulator per column), then the
    writes do the same walk."""
    plan = CpuPlan(flat=False, col_block=COL_BLOCK)
    g, b = Var("g"), Var("b")
    lo, hi = Var("lo"), Var("hi")
    nb, cb, c0, cn, cc = Var("nb"), Var("cb"), Var("c0"), Var("cn"), Var("cc")
    hn, tn = Namer("h"), Namer("t")
    block: list[Stmt] = [
        Let(ROW, div(b, nb)), Let(cb, mod(b, nb)), Let(c0, mul(cb, COL_BLOCK)),
        Let(cn, minimum(const(COL_BLOCK), sub(spec.cols, c0)))]
    results: dict[Var, Expr] = {}

    def column_loop(body: list[Stmt]) -> For:
        return For(cc, const(0), cn, "vectorized", [Let(COL, add(c0, cc)), *body])

    def walk(values: list[Expr], make: Callable[[list[Expr]], list[Stmt]]) -> list[Stmt]:
        values = [transform(v, results.get) for v in values]
        outer, values = hoist(values, {INNER.name, COL.name, cc.name}, hn)
        per_k, values = hoist(values, {COL.name, cc.name}, hn)
        lets, values = cse(values, tn)
        return [*outer, For(INNER, const(0), spec.inner, "serial",
                            [*per_k, column_loop([*lets, *make(values)])])]

    for n, phase in enumerate(spec.phases):
        accs, res = f"accs{n}", f"res{n}"
        dt = phase.acc_dtype
        acc = Load(accs, cc, dt)
        block += [Alloc(accs, dt, COL_BLOCK),
                  For(cc, const(0), cn, "vectorized", [Store(accs, cc, phase.init)])]
        block += walk([phase.value],
                      lambda v, accs=accs, acc=acc, op=phase.op: [
                          Store(accs, cc, combine(op, acc, v[0]))])
        final = acc if phase.finalize is None else substitute(phase.finalize, {acc_var(dt): acc})
        block += [Alloc(res, dt, COL_BLOCK),
                  For(cc, const(0), cn, "vectorized", [Store(res, cc, final)])]
        results[phase.result] = Load(res, cc, dt)
    if spec.element_writes:
        exprs: list[Expr] = []
        for w in spec.element_writes:
            exprs += [w.index, w.value]
        writes = spec.element_writes
        block += walk(exprs, lambda v: [Store(w.buf, v[2 * i], v[2 * i + 1])
                                        for i, w in enumerate(writes)])
    if spec.row_writes:
        vals = [transform(e, results.get) for w in spec.row_writes for e in (w.index, w.value)]
        lets, vals = cse(vals, tn)
        block.append(column_loop([*lets, *[Store(w.buf, vals[2 * i], vals[2 * i + 1])
                                           for i, w in enumerate(spec.row_writes)]]))
    total = mul(spec.rows, nb)
    head: list[Stmt] = [
        Let(nb, div(add(spec.cols, COL_BLOCK - 1), COL_BLOCK)),
        Let(lo, mul(g, CHUNK)), Let(hi, minimum(add(lo, CHUNK), total))]
    outer = For(g, const(0), GRID, "parallel",
                [*head, For(b, lo, sub(hi, lo), "serial", block)], axis=0)
    scalars = [*spec.dims, ScalarParam(CHUNK.name)]
    return Kernel(spec.name, spec.buffers, scalars, [outer]), plan
