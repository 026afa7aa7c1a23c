"""DRR in Python: a source pattern (ops, tensors, attribute and constant bindings), constraints
(predicates over the match) and a result pattern (ops with literal or computed attributes),
compiled into a RewritePattern for the greedy driver.

    p = drr.Pattern("matmul_add_to_linear")
    mm = p.src.pd_op.matmul(p.src.tensor("x"), p.src.tensor("w"), transpose_x=False,
                            transpose_y=False)
    p.src.output(p.src.pd_op.add(mm, p.src.tensor("b")))
    p.constrain(lambda m: m.type("w").ndim == 2 and m.type("b").ndim == 1)
    p.res.output(p.res.pd_op.linear(p.res.tensor("x"), p.res.tensor("w"), p.res.tensor("b")))
    rewrite_pattern = p.compile()

Matching starts at the source output's op and walks operands: an op node matches an op of
that name whose literal attributes are equal and whose bound attributes agree with earlier
bindings (Commutative ops in either operand order); a tensor binds a value (the same name, the
same value); `constant(name)` binds the scalar of a splat constant. The values produced inside
the match must have no uses outside it, so a shared intermediate blocks the rewrite. The
result's types must equal the replaced ones (else nothing changes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .core import Operation, OpResult, Value
from .dialect import COMMUTATIVE
from .passes.canonicalize import splat_value
from .passes.rewrite import PatternRewriter, RewritePattern
from .types import Type

# ---- the source side ----------------------------------------------------------------------


@dataclass(eq=False)
class _Tensor:
    name: str


@dataclass(eq=False)
class _Constant:
    name: str


@dataclass(eq=False)
class _Attr:
    """A source attribute bound to a name, or a result attribute computed from the match."""

    name: str | None = None
    fn: Callable[[Match], Any] | None = None


@dataclass(eq=False)
class _OpNode:
    name: str
    operands: list[Any]
    attrs: dict[str, Any]
    index: int = 0  # which result of the op this node stands for


class _Namespace:
    def __init__(self, make: Callable[..., Any]) -> None:
        self._make = make

    def __getattr__(self, op: str) -> Callable[..., _OpNode]:
        return lambda *operands, **attrs: self._make(f"pd_op.{op}", operands, attrs)


class _Side:
    """What both sides of a pattern write: ops (pd_op.<name>(...) or op(name, ...)), tensors
    by name, and the output."""

    def __init__(self) -> None:
        self.root: _OpNode | None = None
        self.pd_op = _Namespace(self.op)

    def op(self, name: str, operands: tuple = (), attrs: dict[str, Any] | None = None
           ) -> _OpNode:
        return _OpNode(name, list(operands), dict(attrs or {}))

    def tensor(self, name: str) -> _Tensor:
        return _Tensor(name)

    def output(self, node: _OpNode) -> None:
        self.root = node


class SourcePattern(_Side):
    def constant(self, name: str) -> _Constant:
        """A splat constant (builtin.constant scalar, pd_op fill/full/zeros/ones); its scalar
        is bound to `name`."""
        return _Constant(name)

    def attr(self, name: str) -> _Attr:
        return _Attr(name=name)


class ResultPattern(_Side):
    def attr(self, fn: Callable[[Match], Any] | str) -> _Attr:
        """An attribute computed from the match (a function of it, or a binding's name)."""
        return _Attr(fn=(lambda m: m[fn]) if isinstance(fn, str) else fn)


@dataclass
class Match:
    bindings: dict[str, Any] = field(default_factory=dict)  # tensors, attributes, constants
    ops: dict[int, Operation] = field(default_factory=dict)  # id(node) -> matched op

    def __getitem__(self, name: str) -> Any:
        return self.bindings[name]

    def type(self, name: str) -> Type:
        return self.bindings[name].type

    def copy(self) -> Match:
        return Match(dict(self.bindings), dict(self.ops))


def _bind(m: Match, name: str, value: Any) -> bool:
    if name in m.bindings:
        old = m.bindings[name]
        return old is value if isinstance(value, Value) else old == value
    m.bindings[name] = value
    return True


def _match(node: Any, v: Value | None, m: Match) -> Match | None:
    if v is None:
        return None
    if isinstance(node, _Tensor):
        return m if _bind(m, node.name, v) else None
    if isinstance(node, _Constant):
        c = splat_value(v)
        return m if c is not None and _bind(m, node.name, c) else None
    op = v.defining_op() if isinstance(v, OpResult) else None
    if op is None or op.name != node.name or v.index != node.index:
        return None
    if id(node) in m.ops:
        return m if m.ops[id(node)] is op else None
    m.ops[id(node)] = op
    for key, want in node.attrs.items():
        got = op.attr(key)
        if isinstance(want, _Attr):
            if not _bind(m, want.name, got):
                return None
        elif got != want:
            return None
    if len(node.operands) != op.num_operands:
        return None
    orders = [list(op.operands)]
    if op.has_trait(COMMUTATIVE) and op.num_operands == 2:
        orders.append(orders[0][::-1])
    for operands in orders:
        trial: Match | None = m.copy()
        for sub, value in zip(node.operands, operands, strict=True):
            trial = _match(sub, value, trial)
            if trial is None:
                break
        if trial is not None:
            return trial
    return None


class Pattern:
    """A DRR pattern: fill `src`, `res` and constraints, then compile()."""

    def __init__(self, name: str, benefit: int | None = None) -> None:
        self.name = name
        self.src = SourcePattern()
        self.res = ResultPattern()
        self.constraints: list[Callable[[Match], bool]] = []
        self.benefit = benefit

    def constrain(self, fn: Callable[[Match], bool]) -> None:
        self.constraints.append(fn)

    def match(self, op: Operation) -> Match | None:
        root = self.src.root
        if root is None or not op.results:
            return None
        m = _match(root, op.results[root.index], Match())
        if m is None:
            return None
        inside = {id(o) for o in m.ops.values()}
        for o in m.ops.values():  # intermediates used outside the match stay as they are
            if o is op:
                continue
            for r in o.results:
                if any(id(u.owner) not in inside for u in r.uses):
                    return None
        try:
            ok = all(c(m) for c in self.constraints)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            ok = False  # a constraint that cannot be evaluated on this match refuses it
        return m if ok else None

    def compile(self) -> RewritePattern:
        if self.src.root is None or self.res.root is None:
            raise ValueError(f"DRR pattern {self.name}: give src.output(...) and "
                             "res.output(...)")
        return _Compiled(self)


def _count(node: Any, seen: set[int]) -> int:
    if not isinstance(node, _OpNode) or id(node) in seen:
        return 0
    seen.add(id(node))
    return 1 + sum(_count(o, seen) for o in node.operands)


class _Compiled(RewritePattern):
    def __init__(self, pattern: Pattern) -> None:
        self.pattern = pattern
        self.root = pattern.src.root.name
        # larger source patterns first, unless the pattern says otherwise
        self.benefit = (pattern.benefit if pattern.benefit is not None
                        else _count(pattern.src.root, set()))

    @property
    def name(self) -> str:
        return self.pattern.name

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        m = self.pattern.match(op)
        if m is None:
            return False
        made: list[Operation] = []
        memo: dict[int, Value | None] = {}

        def build(node: Any) -> Value | None:
            if node is None:
                return None
            if isinstance(node, _Tensor):
                return m[node.name]
            if id(node) in memo:
                return memo[id(node)]
            operands = [build(o) for o in node.operands]
            attrs = {k: (a.fn(m) if isinstance(a, _Attr) else a) for k, a in node.attrs.items()}
            info_name = node.name.split(".", 1)
            if info_name[0] == "pd_op":
                out = getattr(rewriter.pd_op, info_name[1])(*operands, **attrs)
                value = out[node.index] if isinstance(out, (tuple, list)) else out
            else:
                raise ValueError(f"DRR pattern {self.name}: result ops are pd_op ops, got "
                                 f"{node.name}")
            made.append(value.defining_op())
            memo[id(node)] = value
            return value

        root = self.pattern.res.root
        try:
            new = build(root)
        except (TypeError, ValueError):  # the result refuses these operands: no rewrite
            new = None
        old = op.results[self.pattern.src.root.index]
        if new is None or new.type != old.type:
            for o in reversed(made):
                if not any(r.has_uses() for r in o.results):
                    rewriter.erase_op(o)
            return False
        rewriter.replace_all_uses_with(old, new)
        if not any(r.has_uses() for r in op.results):
            rewriter.erase_op(op)
        return True
