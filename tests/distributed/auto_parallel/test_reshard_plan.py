"""The reshard planner, proven by simulation: for random (mesh, placements) -> (mesh,
placements) transitions of random shapes (uneven and empty dims included), the planned steps
run on simulated ranks give every rank exactly its destination local value; the bytes each
transition moves are the theoretical minimum (what a rank lacks, for shard moves; the
bandwidth-optimal all-reduce and reduce-scatter bounds for partials)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hwport.distributed.auto_parallel import ProcessMesh, ReduceType, TensorDistAttr
from hwport.distributed.auto_parallel import simulate as sim
from hwport.distributed.auto_parallel.reshard_plan import (
    _collective_plan,
    plan_reshard,
    plan_same_mesh,
)
from hwport.distributed.auto_parallel.reshard_sim import run_plan

from .sim_harness import random_attr

A = TensorDistAttr
SUM, MAX = ReduceType.kRedSum, ReduceType.kRedMax


def _by_rank(mesh: ProcessMesh, per_coord: dict) -> dict[int, np.ndarray]:
    return {mesh.process_id_at(c): v for c, v in per_coord.items()}


def check_transition(src_mesh: ProcessMesh, src: A, dst_mesh: ProcessMesh, dst: A,
                     g: np.ndarray, rng: np.random.Generator) -> None:
    plan = plan_reshard(src_mesh, src, dst_mesh, dst, g.shape, g.itemsize)
    values = _by_rank(src_mesh, sim.split(g, src, src_mesh.shape, rng))
    out = run_plan(plan, values, g.shape)
    assert set(out) == set(dst_mesh.process_ids), plan
    what = f"{src_mesh} {src} -> {dst_mesh} {dst} {g.shape}: {plan.steps}"
    if not dst.partial:  # every rank holds exactly its destination shard
        want = sim.split(g, dst, dst_mesh.shape)
        for c in sim.coords(dst_mesh.shape):
            np.testing.assert_allclose(out[dst_mesh.process_id_at(c)], want[c], rtol=1e-9,
                                       atol=1e-9, err_msg=what)
    per_coord = {c: out[dst_mesh.process_id_at(c)] for c in sim.coords(dst_mesh.shape)}
    got = sim.assemble(per_coord, dst, dst_mesh.shape, g.shape)
    np.testing.assert_allclose(got, g, rtol=1e-9, atol=1e-9, err_msg=what)
    assert plan.steps[-1].after == dst if plan.steps else src == dst


MESHES = [ProcessMesh([0, 1]), ProcessMesh([0, 1, 2]), ProcessMesh([[0, 1], [2, 3]]),
          ProcessMesh([[0, 1, 2], [3, 4, 5]]), ProcessMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])]


@pytest.mark.parametrize("mesh", MESHES, ids=lambda m: "x".join(map(str, m.shape)))
def test_same_mesh_random_transitions(mesh: ProcessMesh) -> None:
    rng = np.random.default_rng(mesh.size)
    for _ in range(150):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 12])) for _ in range(nd))
        g = rng.standard_normal(shape)
        src = random_attr(shape, mesh.shape, rng)
        dst = random_attr(shape, mesh.shape, rng)
        check_transition(mesh, src, mesh, dst, g, rng)


def test_cross_mesh_transitions() -> None:
    rng = np.random.default_rng(7)
    m0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    m1 = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    m2 = ProcessMesh([4, 5, 6])
    for dst_mesh in (m1, m2, ProcessMesh([[3, 2], [1, 0]])):
        for _ in range(60):
            shape = tuple(int(rng.choice([1, 3, 4, 6, 8])) for _ in range(int(rng.integers(1, 4))))
            g = rng.standard_normal(shape)
            check_transition(m0, random_attr(shape, m0.shape, rng), dst_mesh,
                             random_attr(shape, dst_mesh.shape, rng), g, rng)


def test_paddle_pipeline_example_transition() -> None:
    """y = x @ w0 on mesh0 as [Shard(0), Shard(2)]... resharded to mesh1 [Shard(0), Shard(2)]."""
    m0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    m1 = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    src, dst = A((0, -1, 1)), A((0, -1, 1))
    plan = plan_reshard(m0, src, m1, dst, (4, 8, 16), 4)
    assert plan.kinds() == ["send_recv"]
    assert plan.total_bytes == 4 * 8 * 16 * 4  # each element crosses once
    check_transition(m0, src, m1, dst, np.random.default_rng(0).standard_normal((4, 8, 16)),
                     np.random.default_rng(1))


def lower_bound(mesh: ProcessMesh, src: A, dst: A, shape: tuple[int, ...], itemsize: int) -> int:
    """Bytes every rank must receive, summed. Shard/Replicate only: the elements of its
    destination region it does not hold already. One mesh dim of size n with a partial source:
    the bandwidth-optimal bounds, 2(n-1)/n of the buffer per rank for an all-reduce, (n-1)/n
    for a reduce-scatter (Patarasuk & Yuan 2009; Chan et al. 2007)."""
    total = 0
    n = mesh.size
    for c in sim.coords(mesh.shape):
        have = sim.shard_index(shape, src, mesh.shape, c)
        want = sim.shard_index(shape, dst, mesh.shape, c)
        sizes = [len(range(*w.indices(d))) for w, d in zip(want, shape, strict=True)]
        overlap = [len(range(max(h.indices(d)[0], w.indices(d)[0]),
                             min(h.indices(d)[1], w.indices(d)[1])))
                   for h, w, d in zip(have, want, shape, strict=True)]
        local = math.prod(sim.local_shape(shape, src, mesh.shape, c))
        if src.partial and src.partial != dst.partial:
            if any(d != -1 for d in dst.dims_mapping) and not src.dims_mapping.count(0):
                total += (n - 1) * local // n  # reduce-scatter
            else:
                total += 2 * (n - 1) * local // n  # all-reduce
        else:
            total += math.prod(sizes) - math.prod(overlap)
    return total * itemsize


PLACEMENTS_1D = ["R", "S0", "S1", "P"]


def _attr1(p: str) -> A:
    return {"R": A((-1, -1)), "S0": A((0, -1)), "S1": A((-1, 0)), "P": A((-1, -1), {0: SUM})}[p]


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(PLACEMENTS_1D, repeat=2)))
@pytest.mark.parametrize("n", [2, 4])
def test_1d_transitions_move_the_minimum(src: str, dst: str, n: int) -> None:
    mesh = ProcessMesh(list(range(n)))
    shape = (8, 12)
    plan = plan_same_mesh(mesh, _attr1(src), _attr1(dst), shape, 4)
    expect = {("S0", "R"): ["all_gather"], ("R", "S0"): ["slice"], ("S0", "S1"): ["all_to_all"],
              ("P", "R"): ["all_reduce"], ("P", "S1"): ["reduce_scatter"],
              ("R", "P"): ["to_partial"]}
    if (src, dst) in expect:
        assert plan.kinds() == expect[(src, dst)]
    assert plan.total_bytes == lower_bound(mesh, _attr1(src), _attr1(dst), shape, 4), plan
    check_transition(mesh, _attr1(src), mesh, _attr1(dst),
                     np.random.default_rng(n).standard_normal(shape), np.random.default_rng(0))


ND_CASES = [  # 2x2 mesh: (src, dst) dims_mapping / partial
    (A((0, -1)), A((-1, 1))),  # slice first, then the gather moves a quarter
    (A((0, 1)), A((-1, -1))),
    (A((-1, -1)), A((1, 0))),
    (A((0, -1)), A((1, -1))),
    (A((-1, 1)), A((0, -1))),
    (A((0, 1)), A((0, -1))),
    (A((0, 1)), A((1, 0))),  # a cycle between mesh dims: point to point
]


@pytest.mark.parametrize(("src", "dst"), ND_CASES)
def test_2d_transitions_move_the_minimum(src: A, dst: A) -> None:
    mesh = ProcessMesh([[0, 1], [2, 3]])
    plan = plan_same_mesh(mesh, src, dst, (8, 12), 2)
    assert plan.total_bytes == lower_bound(mesh, src, dst, (8, 12), 2), plan.steps
    check_transition(mesh, src, mesh, dst, np.random.default_rng(3).standard_normal((8, 12)),
                     np.random.default_rng(4))


def test_partial_then_slice_reduces_less() -> None:
    mesh = ProcessMesh([[0, 1], [2, 3]])
    plan = plan_same_mesh(mesh, A((-1, -1), {0: SUM}), A((-1, 1)), (8, 12), 4)
    assert plan.kinds() == ["slice", "all_reduce"]  # the all-reduce runs on half the data
    assert plan.steps[1].bytes_per_rank[0] == 2 * (2 - 1) * (8 * 6) * 4 // 2


def test_uneven_shards_are_padded() -> None:
    mesh = ProcessMesh([0, 1, 2])
    coll = _collective_plan(mesh, A((0, -1)), A((-1, 0)), (7, 5), 8)
    assert coll.kinds() == ["all_to_all"] and coll.steps[0].padded
    g = np.random.default_rng(5).standard_normal((7, 5))
    out = run_plan(coll, _by_rank(mesh, sim.split(g, A((0, -1)), mesh.shape)), g.shape)
    want = sim.split(g, A((-1, 0)), mesh.shape)
    for c in sim.coords(mesh.shape):
        np.testing.assert_array_equal(out[mesh.process_id_at(c)], want[c])
    # the padding travels: point to point moves less, and is chosen
    plan = plan_same_mesh(mesh, A((0, -1)), A((-1, 0)), (7, 5), 8)
    assert plan.kinds() == ["send_recv"] and plan.total_bytes < coll.total_bytes
    assert not _collective_plan(mesh, A((0, -1)), A((-1, -1)), (6, 5), 8).steps[0].padded
    # with a partial source the reduce-scatter is padded
    plan = plan_same_mesh(mesh, A((-1, -1), {0: SUM}), A((0, -1)), (7, 5), 8)
    assert plan.kinds() == ["reduce_scatter"] and plan.steps[0].padded
    check_transition(mesh, A((-1, -1), {0: SUM}), mesh, A((0, -1)), g,
                     np.random.default_rng(6))


def test_max_partial() -> None:
    mesh = ProcessMesh([0, 1])
    plan = plan_same_mesh(mesh, A((-1,), {0: MAX}), A((0,)), (6,))
    assert plan.kinds() == ["reduce_scatter"] and plan.steps[0].reduce_type == MAX
    plan = plan_same_mesh(mesh, A((-1,), {0: MAX}), A((-1,), {0: SUM}), (6,))
    assert plan.kinds() == ["all_reduce", "to_partial"]


def _region(shape: tuple[int, ...], attr: A, mesh: ProcessMesh, rank: int) -> list[range]:
    c = mesh.get_rank_coord(rank)
    return [range(*s.indices(d)) for s, d in
            zip(sim.shard_index(shape, attr, mesh.shape, c), shape, strict=True)]


def test_cross_mesh_moves_the_minimum() -> None:
    """Across meshes (disjoint, shared processes, different shapes) without partials, each
    destination rank receives exactly the part of its shard its process does not hold."""
    rng = np.random.default_rng(21)
    m0 = ProcessMesh([[0, 1], [2, 3]])
    for dst_mesh in (ProcessMesh([[4, 5], [6, 7]]), ProcessMesh([4, 5, 6]),
                     ProcessMesh([[2, 3], [0, 1]]), ProcessMesh([0, 1, 2, 3, 4, 5])):
        for _ in range(40):
            nd = int(rng.integers(1, 4))
            shape = tuple(int(rng.choice([1, 2, 3, 4, 6, 7])) for _ in range(nd))
            src = A(random_attr(shape, m0.shape, rng, partial_ok=False).dims_mapping)
            dst = A(random_attr(shape, dst_mesh.shape, rng, partial_ok=False).dims_mapping)
            plan = plan_reshard(m0, src, dst_mesh, dst, shape, 8)
            bound = 0
            for r in dst_mesh.process_ids:
                want = _region(shape, dst, dst_mesh, r)
                size = math.prod(len(w) for w in want)
                if m0.contains(r):
                    have = _region(shape, src, m0, r)
                    size -= math.prod(len(range(max(w.start, h.start), min(w.stop, h.stop)))
                                      for w, h in zip(want, have, strict=True))
                bound += size * 8
            assert plan.total_bytes == bound, (src, dst_mesh, dst, shape, plan.steps)
            check_transition(m0, src, dst_mesh, dst, rng.standard_normal(shape), rng)


def test_cross_mesh_partial_destination_sends_to_coordinate_0_only() -> None:
    m0, m1 = ProcessMesh([0, 1]), ProcessMesh([2, 3])
    plan = plan_reshard(m0, A((0, -1)), m1, A((-1, -1), {0: SUM}), (4, 6), 4)
    assert plan.kinds() == ["send_recv", "to_partial"]
    assert plan.steps[0].bytes_per_rank == {2: 4 * 6 * 4, 3: 0}
    check_transition(m0, A((0, -1)), m1, A((-1, -1), {0: SUM}),
                     np.random.default_rng(2).standard_normal((4, 6)), np.random.default_rng(3))


@pytest.mark.parametrize("mesh", MESHES[2:], ids=lambda m: "x".join(map(str, m.shape)))
def test_same_mesh_shard_moves_never_exceed_what_ranks_lack(mesh: ProcessMesh) -> None:
    rng = np.random.default_rng(31)
    for _ in range(100):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(rng.choice([1, 2, 3, 4, 6, 8])) for _ in range(nd))
        src = A(random_attr(shape, mesh.shape, rng, partial_ok=False).dims_mapping)
        dst = A(random_attr(shape, mesh.shape, rng, partial_ok=False).dims_mapping)
        plan = plan_same_mesh(mesh, src, dst, shape, 4)
        assert plan.total_bytes == lower_bound(mesh, src, dst, shape, 4), (src, dst, shape)
        check_transition(mesh, src, mesh, dst, rng.standard_normal(shape), rng)
