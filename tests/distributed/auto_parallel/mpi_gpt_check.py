"""Run under mpirun with 4 ranks: a GPT block (gpt_block.py) forward with data x tensor
parallelism on a 2 x 2 mesh through dist_call and the real collectives; the loss equals the
single-process one (float32). Prints "gpt ok <rank>"."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import hwport.distributed as dist
from hwport.distributed.auto_parallel import (
    DistTensor,
    ProcessMesh,
    Replicate,
    dist_call,
    reshard,
    shard_tensor,
)
from phi_ops.reference import reference
from tests.distributed.auto_parallel.gpt_block import (
    X_LAYOUT,
    gpt_block,
    layout,
    params_and_input,
)


def main() -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    params, x = params_and_input(5, np.float32)
    dp = {k: shard_tensor(v, mesh, layout(k).to_placements(2)) for k, v in params.items()}
    dx = shard_tensor(x, mesh, X_LAYOUT.to_placements(2))

    def call(op: str, inputs: list, attrs: dict | None = None) -> DistTensor:
        out = dist_call(op, inputs, attrs)
        assert isinstance(out, DistTensor)
        return out

    def np_call(op: str, inputs: list, attrs: dict | None = None) -> Any:
        return reference(op, inputs, attrs or {})

    loss = reshard(gpt_block(call, dx, dp), mesh, [Replicate(), Replicate()])
    got = float(loss._local_value().numpy())
    want = float(gpt_block(np_call, x, params))
    if not np.isclose(got, want, rtol=1e-4, atol=1e-6):
        print(f"rank {rank}: loss {got}, single process {want}", file=sys.stderr)
        return 1
    print(f"gpt ok {rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
