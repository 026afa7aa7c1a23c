"""ProcessMesh against Paddle 3.3.1's behaviour (values recorded from paddle.distributed)."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.distributed.auto_parallel import ProcessMesh


def test_attributes() -> None:
    pm = ProcessMesh([[2, 4, 5], [0, 1, 3]], dim_names=["x", "y"])
    assert pm.shape == [2, 3] and pm.ndim == 2 and pm.size == 6
    assert pm.process_ids == [2, 4, 5, 0, 1, 3]
    assert pm.dim_names == ["x", "y"]
    assert pm.get_dim_size("y") == 3 and pm.get_dim_size(0) == 2 and pm.get_dim_size(None) == 1
    assert isinstance(pm.mesh, np.ndarray) and pm.mesh.tolist() == [[2, 4, 5], [0, 1, 3]]
    assert ProcessMesh([0, 1, 2, 3]).dim_names == ["d0"]
    assert ProcessMesh(shape=[2, 2], process_ids=[3, 2, 1, 0]).mesh.tolist() == [[3, 2], [1, 0]]
    assert str(pm) == "shape [2, 3], process_ids [2, 4, 5, 0, 1, 3], dim_names ['x', 'y']"
    assert pm.contains(5) and not pm.contains(7)


def test_equality_and_hash() -> None:
    a = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    assert a == ProcessMesh([[0, 1], [2, 3]], dim_names=["p", "q"])  # names do not count
    assert a != ProcessMesh([[0, 2], [1, 3]])
    assert a != ProcessMesh([0, 1, 2, 3])
    assert hash(a) == hash(ProcessMesh([[0, 1], [2, 3]]))
    assert len({a, ProcessMesh([[0, 1], [2, 3]])}) == 1


@pytest.mark.parametrize("bad", [[[0, 1], [1, 2]], [-1, 0], [0.5, 1], [], 3])
def test_bad_meshes(bad: object) -> None:
    with pytest.raises(ValueError):
        ProcessMesh(bad)


def test_bad_dim_names() -> None:
    with pytest.raises(ValueError):
        ProcessMesh([[0, 1], [2, 3]], dim_names=["x"])
    with pytest.raises(ValueError):
        ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "x"])


def test_sub_meshes_as_paddle() -> None:
    pm = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    # mesh["x"]: the 1-D mesh along x through this rank (rank 0 in a single process)
    sub = pm.get_submesh_with_dim("x", process_id=0)
    assert (sub.process_ids, sub.shape, sub.dim_names) == ([0, 2], [2], ["x"])
    assert pm.get_submesh_with_dim("y", process_id=3).process_ids == [2, 3]
    assert pm.get_submesh_with_dim("y", process_id=9) is None
    assert pm["x"].process_ids == [0, 2]
    m = pm.get_mesh_with_dim("y")
    assert (m.shape, m.process_ids, m.dim_names) == ([2, 2], [0, 2, 1, 3], ["y", "x"])
    m = pm.get_mesh_with_dim("y", 1)
    assert (m.shape, m.process_ids, m.dim_names) == ([2], [1, 3], ["x"])
    assert (pm[0].process_ids, pm[0].dim_names) == ([0, 1], ["y"])
    assert (pm[:, 1].process_ids, pm[:, 1].dim_names) == ([1, 3], ["x"])
    assert pm[1, 0].process_ids == [2]
    mesh3 = ProcessMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], dim_names=["pp", "dp", "tp"])
    assert mesh3.get_submesh_with_dim("pp", process_id=3).process_ids == [3, 7]
    assert mesh3.get_submesh_with_dim("dp", process_id=5).process_ids == [5, 7]
    assert mesh3.get_submesh_with_dim("tp", process_id=6).process_ids == [6, 7]


def test_coordinates() -> None:
    pm = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    assert pm.get_rank_coord(6) == (1, 0) and pm.get_rank_coord(0) is None
    assert pm.get_rank_by_dim_and_process_id("y", 5) == 1
    assert pm.get_rank_by_dim_and_process_id("x", 1) == -1
    assert pm.process_id_at((1, 1)) == 7
    assert pm.group_along("x", 5) == [5, 7] and pm.group_along(1, 6) == [6, 7]
    assert pm.coords() == [(0, 0), (0, 1), (1, 0), (1, 1)]
