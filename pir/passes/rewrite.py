"""Pattern rewriting: RewritePattern.match_and_rewrite(op, rewriter), a PatternRewriter that
creates, replaces and erases ops while telling a listener (the greedy driver's worklist, or
your own notify hook), and apply_patterns_greedily: a worklist driver to a fixpoint that tries
the patterns for an op by descending benefit and erases ops that became dead."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ..builder import Builder
from ..core import Operation, Value
from ..dialect import PURE


class RewritePattern:
    """root: the op name the pattern matches (None: any op); benefit: patterns with a larger
    one are tried first. match_and_rewrite returns True when it changed the IR (only then may
    it change it)."""

    root: ClassVar[str | None] = None
    benefit: ClassVar[int] = 1

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return type(self).__name__


class Listener:
    """Hooks for IR changes made through a PatternRewriter (all optional)."""

    def notify_op_inserted(self, op: Operation) -> None: ...

    def notify_op_modified(self, op: Operation) -> None: ...

    def notify_op_replaced(self, op: Operation, values: Sequence[Value]) -> None: ...

    def notify_op_erased(self, op: Operation) -> None: ...


class _Notifying(Builder):
    """A Builder whose inserted ops are reported to the rewriter's listeners."""

    def __init__(self, rewriter: PatternRewriter, op: Operation) -> None:
        super().__init__(op.parent)
        self.before = op
        self._rewriter = rewriter

    def insert(self, op: Operation) -> Operation:
        super().insert(op)
        for listener in self._rewriter.listeners:
            listener.notify_op_inserted(op)
        return op


class PatternRewriter:
    def __init__(self, listeners: Iterable[Listener] = ()) -> None:
        self.listeners = list(listeners)
        self.builder: Builder | None = None

    def set_insertion_point(self, op: Operation) -> None:
        """New ops go right before `op` (the driver sets the matched op)."""
        self.builder = _Notifying(self, op)

    @property
    def pd_op(self) -> Any:
        return self.builder.pd_op

    def create(self, name: str, operands: Sequence[Value | None] = (),
               result_types: Sequence[Any] = (), attributes: dict[str, Any] | None = None
               ) -> Operation:
        return self.builder.create(name, operands, result_types, attributes)

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        for user in old.users:
            for listener in self.listeners:
                listener.notify_op_modified(user)
        old.replace_all_uses_with(new)

    def replace_op(self, op: Operation, values: Sequence[Value]) -> None:
        """Replace every use of op's results with `values`, then erase op."""
        if len(values) != op.num_results:
            raise ValueError(f"replace_op: {op.name} has {op.num_results} result(s), got "
                             f"{len(values)} replacement(s)")
        for listener in self.listeners:
            listener.notify_op_replaced(op, values)
        for r, v in zip(op.results, values, strict=True):
            self.replace_all_uses_with(r, v)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        for listener in self.listeners:
            listener.notify_op_erased(op)
        op.erase()

    def modify_op(self, op: Operation) -> None:
        """Call after changing op in place (operands, attributes)."""
        for listener in self.listeners:
            listener.notify_op_modified(op)


def is_trivially_dead(op: Operation) -> bool:
    return (op.has_trait(PURE) and not op.regions
            and not any(r.has_uses() for r in op.results))


class _Worklist(Listener):
    def __init__(self) -> None:
        self.items: list[Operation] = []
        self.members: set[int] = set()

    def push(self, op: Operation | None) -> None:
        if op is not None and id(op) not in self.members:
            self.items.append(op)
            self.members.add(id(op))

    def pop(self) -> Operation:
        op = self.items.pop()
        self.members.discard(id(op))
        return op

    def notify_op_inserted(self, op: Operation) -> None:
        self.push(op)

    def notify_op_modified(self, op: Operation) -> None:
        self.push(op)

    def notify_op_replaced(self, op: Operation, values: Sequence[Value]) -> None:
        for r in op.results:
            for user in r.users:
                self.push(user)

    def notify_op_erased(self, op: Operation) -> None:
        for v in op.operands:  # their producers may have become dead
            if v is not None:
                self.push(v.defining_op())


def apply_patterns_greedily(root: Operation, patterns: Sequence[RewritePattern],
                            max_iterations: int = 10,
                            listeners: Iterable[Listener] = ()) -> bool:
    """Rewrite the ops nested in `root` until no pattern applies (or max_iterations full
    sweeps). Returns whether anything changed."""
    ordered = sorted(patterns, key=lambda p: -p.benefit)  # stable: equal benefits keep order
    changed = False
    for _ in range(max_iterations):
        worklist = _Worklist()
        rewriter = PatternRewriter([worklist, *listeners])
        for op in reversed([o for o in root.walk() if o is not root]):
            worklist.push(op)  # popped from the end: program order
        swept = False
        while worklist.items:
            op = worklist.pop()
            if op.erased or op.parent is None:
                continue
            if is_trivially_dead(op):
                rewriter.erase_op(op)
                swept = True
                continue
            candidates = [p for p in ordered if p.root in (None, op.name)]
            for pattern in candidates:
                rewriter.set_insertion_point(op)
                if pattern.match_and_rewrite(op, rewriter):
                    swept = True
                    if not op.erased:
                        worklist.push(op)
                    break
        changed |= swept
        if not swept:
            break
    return changed
