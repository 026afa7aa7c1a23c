"""The verifier reports, never crashes: random structural mutations of valid programs give
either a program that verifies or a VerificationError (and the printer still prints it)."""

from __future__ import annotations

import random

from hwport import pir

from .programs import OPS, build_case, first_case


def _programs() -> list[pir.Program]:
    out = [build_case(first_case(name))[0] for name in list(OPS)[::4]]
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", 3], "float32")
        c = b.data("c", [], "bool")
        (r,) = b.cf.if_(c, lambda: [b.pd_op.exp(x)], lambda: [x])
        (w,) = b.cf.while_(c, [r], lambda a: (c, [b.pd_op.tanh(a)]))
        b.output(b.pd_op.concat([w, x], axis=1), "out")
    out.append(p)
    return out


def _mutate(rng: random.Random, p: pir.Program) -> None:
    ops = list(p.walk())
    values = [v for o in ops for v in o.results] + [
        a for o in ops for r in o.regions for blk in r.blocks for a in blk.args]
    if not ops:
        return
    op = rng.choice(ops)
    kind = rng.randrange(9)
    if kind == 0 and op.num_operands:
        op.set_operand(rng.randrange(op.num_operands), rng.choice([*values, None]))
    elif kind == 1:
        op.set_operands(rng.sample(values, min(len(values), rng.randrange(4))))
    elif kind == 2 and op.results:
        op.results[0].type = rng.choice([pir.tensor([2], "int8"), pir.VectorType(()),
                                         pir.tensor(["s9", None], "bool")])
    elif kind == 3:
        op.set_attr(rng.choice(["axis", "shape", "value", "name", "zzz"]),
                    rng.choice([1, [1, 2], "s", None, 2.5, True]))
    elif kind == 4 and op.parent is not None:
        op.remove_from_parent()
    elif kind == 5 and op.parent is not None and len(op.parent.ops) > 1:
        op.move_before(rng.choice(op.parent.ops))
    elif kind == 6 and op.regions:
        op.regions.pop()
    elif kind == 7 and op.regions and op.regions[0].blocks:
        op.regions[0].blocks.clear()
    elif kind == 8:
        op.attributes.clear()


def test_mutated_programs_verify_or_report():
    rng = random.Random(14)
    reported = 0
    for _ in range(6):
        for p in _programs():
            for _ in range(rng.randrange(1, 4)):
                _mutate(rng, p)
            str(p)
            try:
                p.verify()
            except pir.VerificationError as exc:
                assert exc.errors and all(isinstance(e, str) for e in exc.errors)
                reported += 1
    assert reported > 50
