"""Symbolic dimensions: a dim is an int (>= 0; -1 = unknown) or a `SymExpr`, a polynomial with
integer coefficients over named symbols (`s0`, `s0*s1`, `s0+s1+3`, `s0-2`). Infer-meta
computes with them (products for reshape/flatten, sums for concat, broadcasting with 1) and
records what it had to assume in a `Constraints` list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

Monomial = tuple[str, ...]  # sorted symbol names, with repetition (s0*s0 = ("s0", "s0"))
SYMBOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SymExpr:
    """An immutable, hashable polynomial over symbols; canonical (equal polynomials compare
    and hash equal). Build with `sym("s0")`; combine with +, -, * and ints."""

    __slots__ = ("_hash", "terms")

    def __init__(self, terms: dict[Monomial, int]) -> None:
        self.terms: tuple[tuple[Monomial, int], ...] = tuple(
            sorted((m, c) for m, c in terms.items() if c != 0))
        self._hash = hash(self.terms)

    # ---- construction and arithmetic --------------------------------------------------
    @staticmethod
    def _of(v: Dim) -> SymExpr:
        return v if isinstance(v, SymExpr) else SymExpr({(): int(v)})

    def __add__(self, other: Dim) -> Dim:
        out = dict(self.terms)
        for m, c in SymExpr._of(other).terms:
            out[m] = out.get(m, 0) + c
        return simplify(SymExpr(out))

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return simplify(SymExpr({m: -c for m, c in self.terms}))

    def __sub__(self, other: Dim) -> Dim:
        return self + (-SymExpr._of(other))

    def __rsub__(self, other: Dim) -> Dim:
        return SymExpr._of(other) + (-self)

    def __mul__(self, other: Dim) -> Dim:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in SymExpr._of(other).terms:
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return simplify(SymExpr(out))

    __rmul__ = __mul__

    def exact_div(self, other: Dim) -> Dim | None:
        """self / other when other is an int or a single term that divides every term
        exactly; else None (the quotient is not a polynomial)."""
        o = SymExpr._of(other)
        if len(o.terms) != 1:
            return simplify(self) if o == self else None
        (om, oc), = o.terms
        out: dict[Monomial, int] = {}
        for m, c in self.terms:
            rest = list(m)
            for s in om:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % oc:
                return None
            out[tuple(rest)] = c // oc
        return simplify(SymExpr(out))

    # ---- inspection -------------------------------------------------------------------
    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s for m, _ in self.terms for s in m)

    def constant(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def is_symbol(self) -> bool:
        return len(self.terms) == 1 and len(self.terms[0][0]) == 1 and self.terms[0][1] == 1

    def substitute(self, values: dict[str, int]) -> Dim:
        total: Dim = 0
        for m, c in self.terms:
            term: Dim = c
            for s in m:
                term = term * (values[s] if s in values else sym(s))
            total = total + term
        return simplify(total)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymExpr) and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        parts = []
        # Highest degree first, constants last: s0*s1+s0+3
        for m, c in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):
            body = "*".join(m)
            if not body:
                text = str(abs(c))
            elif abs(c) == 1:
                text = body
            else:
                text = f"{abs(c)}*{body}"
            sign = "-" if c < 0 else "+"
            parts.append((sign, text))
        if not parts:
            return "0"
        first_sign, first = parts[0]
        out = ("-" if first_sign == "-" else "") + first
        for sign, text in parts[1:]:
            out += sign + text
        return out

    def __repr__(self) -> str:
        return f"SymExpr({self})"


Dim = int | SymExpr
UNKNOWN = -1  # a dim nothing is known about (Paddle's -1)


def sym(name: str) -> SymExpr:
    if not SYMBOL_RE.fullmatch(name):
        raise ValueError(f"symbol name {name!r} is not an identifier")
    return SymExpr({(name,): 1})


def simplify(d: Dim) -> Dim:
    """A SymExpr that is a constant becomes that int."""
    if isinstance(d, SymExpr):
        c = d.constant()
        return d if c is None else c
    return d


def is_static(d: Dim) -> bool:
    return isinstance(d, int) and d >= 0


def product(dims: Iterable[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = out * d
    return simplify(out)


def parse_dim(text: str) -> Dim:
    """An int, or an expression of symbols, ints, + - * (no parentheses inside)."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if SYMBOL_RE.fullmatch(text):
        return sym(text)
    total: Dim = 0
    for sign, term in re.findall(r"([+-]?)\s*([^+-]+)", text):
        value: Dim = 1
        for raw in term.split("*"):
            factor = raw.strip()
            if factor.isdigit():
                value = value * int(factor)
            elif SYMBOL_RE.fullmatch(factor):
                value = sym(factor) * value
            else:
                raise ValueError(f"bad symbolic dim {text!r} (factor {factor!r})")
        total = total - value if sign == "-" else total + value
    return simplify(total)


@dataclass(frozen=True)
class Constraint:
    """What infer-meta assumed about symbolic dims: kind is
    eq (a == b), broadcastable (a == b or one of them is 1), divisible (a % b == 0)."""

    kind: str
    a: Dim
    b: Dim
    op: str = ""

    def __str__(self) -> str:
        rel = {"eq": "==", "broadcastable": "~", "divisible": "%"}[self.kind]
        return f"{self.a} {rel} {self.b}" + (f" ({self.op})" if self.op else "")


@dataclass
class Constraints:
    items: list[Constraint] = field(default_factory=list)

    def add(self, kind: str, a: Dim, b: Dim, op: str = "") -> None:
        c = Constraint(kind, a, b, op)
        if c not in self.items:
            self.items.append(c)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
