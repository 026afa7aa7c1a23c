"""Rank 1 skips an all_reduce (run under mpirun with HWPORT_CCL_TIMEOUT=2 on 4 ranks).

The other ranks must raise, naming rank 1 as the one that did not arrive; each prints
'WATCHDOG <message>'. Then the job ends (a rank whose collective was abandoned cannot finalize
MPI, so its exit ends the job with a failure status)."""

from __future__ import annotations

import sys
import time

import hwport
import hwport.distributed as dist

dist.init_parallel_env()
rank = dist.get_rank()
x = hwport.to_tensor([float(rank)])
dist.all_reduce(x)  # #1: everyone
print(f"rank {rank} first all_reduce {x.numpy()[0]}", flush=True)
if rank == 1:
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 30)
    sys.exit(0)
try:
    dist.all_reduce(x)  # #2: rank 1 never comes
except RuntimeError as error:
    print(f"rank {rank} WATCHDOG {error}", flush=True)
    sys.exit(3)
print(f"rank {rank} NO ERROR", flush=True)
