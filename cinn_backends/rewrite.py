"""Expression rewrites the schedules use: substitution, hoisting what a loop does not change
out of it, and binding repeated subexpressions once (common subexpressions)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence

from .loop_ir import (
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Let,
    Load,
    Select,
    Unary,
    Var,
    children,
    free_vars,
    nodes,
)


def rebuild(e: Expr, kids: Sequence[Expr]) -> Expr:
    if isinstance(e, Unary):
        return Unary(e.op, kids[0], e.dtype)
    if isinstance(e, Cast):
        return Cast(kids[0], e.dtype)
    if isinstance(e, Binary):
        return Binary(e.op, kids[0], kids[1], e.dtype)
    if isinstance(e, Select):
        return Select(kids[0], kids[1], kids[2], e.dtype)
    if isinstance(e, Call):
        return Call(e.fn, tuple(kids), e.dtype)
    if isinstance(e, Load):
        return Load(e.buf, kids[0], e.dtype)
    return e


def transform(e: Expr, fn: Callable[[Expr], Expr | None],
              memo: dict[int, tuple[Expr, Expr]] | None = None) -> Expr:
    """Bottom-up unless fn(e) answers for e itself (top-down first); each shared node once."""
    memo = {} if memo is None else memo
    hit = memo.get(id(e))
    if hit is not None:
        return hit[1]
    got = fn(e)
    if got is None:
        kids = children(e)
        new = [transform(k, fn, memo) for k in kids]
        got = e if all(a is b for a, b in zip(new, kids, strict=True)) else rebuild(e, new)
    memo[id(e)] = (e, got)  # the node kept alive: its id is not reused meanwhile
    return got


@contextlib.contextmanager
def deep_recursion(limit: int = 20000) -> Iterator[None]:
    """Room for the recursive walks over a long chain of fused ops (depth ~ its length)."""
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)


def substitute(e: Expr, mapping: dict[Var, Expr]) -> Expr:
    return transform(e, lambda x: mapping.get(x) if isinstance(x, Var) else None)


def _trivial(e: Expr) -> bool:
    if isinstance(e, Const | Var):
        return True
    return isinstance(e, Cast) and isinstance(e.a, Const | Var)


class Namer:
    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0

    def __call__(self, dtype: str) -> Var:
        self.n += 1
        return Var(f"{self.prefix}{self.n}", dtype)


def guarded_loads(exprs: Sequence[Expr]) -> set[int]:
    """ids of the nodes that read memory under a select's branch (pad's `inside ? x[i - b] :
    value`): only the select may evaluate them (C's ?: evaluates one branch), so they are
    neither hoisted nor bound ahead of it, where their address may be out of bounds."""
    selects = [e for e in nodes(exprs) if isinstance(e, Select)]
    if not selects:
        return set()
    has_load: dict[int, bool] = {}

    def loads(e: Expr) -> bool:
        if id(e) not in has_load:
            has_load[id(e)] = isinstance(e, Load) | any([loads(c) for c in children(e)])
        return has_load[id(e)]

    return {id(n) for e in selects for n in nodes([e.a, e.b]) if loads(n)}


def hoist(exprs: Sequence[Expr], loop_vars: set[str], namer: Namer,
          lets: list[Let] | None = None) -> tuple[list[Let], list[Expr]]:
    """Binds the largest subexpressions that read none of loop_vars (and are worth a
    variable) to Lets placed before the loop; returns (lets, rewritten exprs)."""
    lets = [] if lets is None else lets
    bound: dict[Expr, Var] = {let.value: let.var for let in lets}
    guarded = guarded_loads(exprs)

    def fn(e: Expr) -> Expr | None:
        if _trivial(e):
            return e
        if id(e) in guarded or free_vars(e) & loop_vars:
            return None
        if e not in bound:
            v = namer(e.dtype)
            bound[e] = v
            lets.append(Let(v, e))
        return bound[e]

    memo: dict[int, tuple[Expr, Expr]] = {}
    return lets, [transform(e, fn, memo) for e in exprs]


def cse(exprs: Sequence[Expr], namer: Namer) -> tuple[list[Let], list[Expr]]:
    """Binds every non-trivial subexpression that occurs more than once to a Let (in
    dependency order); returns (lets, rewritten exprs)."""
    count: dict[Expr, int] = {}
    guarded = guarded_loads(exprs)

    def visit(e: Expr) -> None:
        if _trivial(e) or id(e) in guarded:
            for k in children(e) if id(e) in guarded else ():
                visit(k)
            return
        count[e] = count.get(e, 0) + 1
        if count[e] == 1:
            for k in children(e):
                visit(k)

    for e in exprs:
        visit(e)
    lets: list[Let] = []
    bound: dict[Expr, Var] = {}

    def fn(e: Expr) -> Expr:
        if e in bound:
            return bound[e]
        kids = children(e)
        new = rebuild(e, [fn(k) for k in kids]) if kids else e
        if count.get(e, 0) > 1:
            v = namer(e.dtype)
            bound[e] = v
            lets.append(Let(v, new))
            return v
        return new

    return lets, [fn(e) for e in exprs]
