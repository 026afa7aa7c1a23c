"""Shard / Replicate / Partial and ReduceType, against Paddle 3.3.1's behaviour (values
recorded from paddle.distributed)."""

from __future__ import annotations

import pytest

from hwport.distributed.auto_parallel import (
    Partial,
    Placement,
    ReduceType,
    Replicate,
    Shard,
    TensorDistAttr,
)


def test_reduce_type_values_match_paddle() -> None:
    assert [int(getattr(ReduceType, n)) for n in
            ("kRedSum", "kRedMax", "kRedMin", "kRedProd", "kRedAvg", "kRedAny", "kRedAll")] == [
        0, 1, 2, 3, 4, 5, 6]


def test_shard() -> None:
    s = Shard(1)
    assert isinstance(s, Placement)
    assert (s.get_dim(), s.is_shard(), s.is_shard(1), s.is_shard(0)) == (1, True, True, False)
    assert not s.is_replicated() and not s.is_partial()
    assert s == Shard(1) and s != Shard(0) and s != Replicate()
    assert hash(s) == hash(Shard(1))
    assert repr(s) == "Shard(dim=1)"
    assert Shard(dim=2).get_dim() == 2
    with pytest.raises(TypeError):
        Shard(1.5)  # type: ignore[arg-type]


def test_replicate() -> None:
    r = Replicate()
    assert r.is_replicated() and not r.is_shard() and not r.is_partial()
    assert r == Replicate() and hash(r) == hash(Replicate())
    assert repr(r) == "Replicate()"


def test_partial() -> None:
    p = Partial()
    assert p.is_partial() and p.reduce_type() == ReduceType.kRedSum
    assert repr(p) == "Partial(reduce_type=SUM)"
    assert repr(Partial(ReduceType.kRedMax)) == "Partial(reduce_type=MAX)"
    assert Partial(reduce_type=ReduceType.kRedMax) != Partial()
    assert Partial(ReduceType.kRedAvg) == Partial("avg")
    assert not p.is_shard() and not p.is_replicated()


def test_dist_attr_round_trip() -> None:
    pl = [Shard(1), Partial(ReduceType.kRedMax), Replicate()]
    a = TensorDistAttr.from_placements(pl, 3)
    assert a.dims_mapping == (-1, 0, -1)
    assert a.partial == {1: ReduceType.kRedMax}
    assert a.to_placements(3) == pl
    # a tensor dim sharded over two mesh dims keeps the first
    assert TensorDistAttr.from_placements([Shard(0), Shard(0)], 2).dims_mapping == (0, -1)
    assert TensorDistAttr.from_placements([Shard(-1)], 2).dims_mapping == (-1, 0)
    with pytest.raises(ValueError):
        TensorDistAttr((0, 0))
    with pytest.raises(ValueError):
        TensorDistAttr((0, -1), {0: ReduceType.kRedSum})
    with pytest.raises(ValueError):
        TensorDistAttr.from_placements([Shard(2)], 2)
