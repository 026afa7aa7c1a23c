"""The reshard executor (reshard_exec.py) run for every rank at once over a threads backend:
random transitions on one mesh and across meshes give each rank its destination shard, with
the collectives the plan names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hwport.distributed.auto_parallel import ProcessMesh, TensorDistAttr
from hwport.distributed.auto_parallel import simulate as sim
from hwport.distributed.auto_parallel.reshard_exec import run_step
from hwport.distributed.auto_parallel.reshard_plan import _collective_plan, plan_reshard

from .sim_harness import random_attr
from .thread_backend import ThreadBackend, ThreadWorld

A = TensorDistAttr


def run_transition(world_size: int, src_mesh: ProcessMesh, src: A, dst_mesh: ProcessMesh,
                   dst: A, g: np.ndarray, rng: np.random.Generator,
                   planner: Callable[..., Any] = plan_reshard) -> None:
    plan = planner(src_mesh, src, dst_mesh, dst, g.shape, g.itemsize)
    start = {src_mesh.process_id_at(c): v
             for c, v in sim.split(g, src, src_mesh.shape, rng).items()}

    def rank_fn(be: ThreadBackend) -> np.ndarray | None:
        value = start.get(be.rank())
        for step in plan.steps:
            value = run_step(step, value, g.shape, be)
        return value

    out = ThreadWorld(world_size).run(rank_fn, g.dtype)
    what = f"{src_mesh} {src} -> {dst_mesh} {dst} {g.shape}: {plan.steps}"
    for r in range(world_size):
        if not dst_mesh.contains(r):
            assert out[r] is None, what
    per_coord = {c: out[dst_mesh.process_id_at(c)] for c in sim.coords(dst_mesh.shape)}
    if not dst.partial:
        want = sim.split(g, dst, dst_mesh.shape)
        for c, v in per_coord.items():
            np.testing.assert_allclose(v, want[c], rtol=1e-9, atol=1e-9, err_msg=what)
    got = sim.assemble(per_coord, dst, dst_mesh.shape, g.shape)
    np.testing.assert_allclose(got, g, rtol=1e-9, atol=1e-9, err_msg=what)


@pytest.mark.parametrize("mesh", [ProcessMesh([0, 1, 2]), ProcessMesh([[0, 1], [2, 3]]),
                                  ProcessMesh([[3, 1], [0, 2]])], ids=["3", "2x2", "2x2perm"])
def test_same_mesh(mesh: ProcessMesh) -> None:
    rng = np.random.default_rng(11)
    for _ in range(40):
        shape = tuple(int(rng.choice([0, 1, 3, 4, 5, 6])) for _ in range(int(rng.integers(1, 4))))
        g = rng.standard_normal(shape)
        run_transition(mesh.size, mesh, random_attr(shape, mesh.shape, rng), mesh,
                       random_attr(shape, mesh.shape, rng), g, rng)


def test_across_meshes() -> None:
    rng = np.random.default_rng(12)
    m0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    for dst_mesh in (ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"]), ProcessMesh([5, 6, 7]),
                     ProcessMesh([[2, 3], [0, 1]])):
        for _ in range(15):
            shape = tuple(int(rng.choice([1, 3, 4, 6])) for _ in range(int(rng.integers(1, 4))))
            g = rng.standard_normal(shape)
            run_transition(8, m0, random_attr(shape, m0.shape, rng), dst_mesh,
                           random_attr(shape, dst_mesh.shape, rng), g, rng)


def test_integer_values_are_exact() -> None:
    rng = np.random.default_rng(13)
    mesh = ProcessMesh([[0, 1], [2, 3]])
    g = rng.integers(-100, 100, size=(5, 6)).astype(np.int32)
    run_transition(4, mesh, A((0, 1)), mesh, A((1, 0)), g, rng)
    run_transition(4, mesh, A((-1, 0), {1: 0}), mesh, A((1, -1)), g, rng)


def test_padded_collectives() -> None:
    """The collectives' plans for uneven shards (plan_same_mesh prefers point to point there:
    the padding travels), run through the executor's padding and trimming."""
    rng = np.random.default_rng(14)
    mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]])

    def collectives(m: ProcessMesh, s: A, _m: ProcessMesh, d: A, shape: tuple, item: int) -> Any:
        return _collective_plan(m, s, d, shape, item)

    for _ in range(30):
        shape = tuple(int(rng.choice([1, 4, 5, 7])) for _ in range(int(rng.integers(1, 4))))
        run_transition(6, mesh, random_attr(shape, mesh.shape, rng), mesh,
                       random_attr(shape, mesh.shape, rng), rng.standard_normal(shape), rng,
                       collectives)
