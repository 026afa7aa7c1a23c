"""Rank 1 breaks the order of collectives (run under mpirun on 4 ranks).

  skip <seconds>  rank 1 sleeps instead of the second all_reduce (HWPORT_CCL_TIMEOUT=2): the
                  others must raise at the timeout, naming rank 1 as the one that did not arrive
  mismatch        rank 1 calls broadcast where the others call all_reduce: every rank must
                  raise at once, naming rank 1 and the collective it is in

Each rank that raises prints 'WATCHDOG <message>' and exits with 3. After an abandoned
collective MPI cannot be finalized, so the job ends with a failure status: the first rank to
exit aborts the job, so a rank that raised first waits (a file per reporting rank in
$HWPORT_TEST_REPORT_DIR holding its message, up to 60 s) until every rank expected to raise
has reported. The test reads the files: the ranks' printed lines can interleave."""

from __future__ import annotations

import os
import sys
import time

import hwport
import hwport.distributed as dist

mode = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
x = hwport.to_tensor([float(rank)])
dist.all_reduce(x)  # #1: everyone
print(f"rank {rank} first all_reduce {x.numpy()[0]}", flush=True)
try:
    if rank == 1 and mode == "skip":
        time.sleep(float(sys.argv[2]))
        sys.exit(0)
    elif rank == 1:
        dist.broadcast(x, src=0)
    else:
        dist.all_reduce(x)  # #2
except RuntimeError as error:
    print(f"rank {rank} WATCHDOG {error}", flush=True)
    folder = os.environ.get("HWPORT_TEST_REPORT_DIR")
    if folder:
        with open(os.path.join(folder, str(rank)), "w") as report:
            report.write(str(error))
        expected = dist.get_world_size() - (1 if mode == "skip" else 0)
        deadline = time.monotonic() + 60
        while len(os.listdir(folder)) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
    sys.exit(3)
print(f"rank {rank} NO ERROR", flush=True)
