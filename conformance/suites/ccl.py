"""The ccl suite: a plugin's collectives, run on N ranks under mpirun by hwcheck itself
(`hwcheck run --plugin X --suite ccl --ranks 2`).

hwcheck launches `mpirun -n N python -m hwport.conformance.ccl_worker` once for the suite (again
after a crash or a hang, with the cases left); every rank creates its communicator through the
runtime as an application does (the plugin's own CCL table when it has a complete 1.2 one,
else the host's MPI adapter for the plugin's device) and runs the cases in step. Each case's
result merges the ranks' verdicts (a FAIL names the rank); a case some rank did not finish is
CRASH (mpirun ended) or TIMEOUT (no rank progressed within --timeout; mpirun is killed).

  comm_init                            unique id on rank 0, broadcast, comm_init on every rank
  <collective>/[<op>/]<dtype>/n<count> all_reduce (sum, prod, max, min, avg), broadcast (root
                                       n-1), reduce (sum, max; root n-1, the others' output
                                       untouched), all_gather, reduce_scatter (sum, max),
                                       all_to_all, send_recv (a ring) x every dtype x sizes
                                       (0, 1, 1023, 65537, 4 MiB + 1 element; --ccl-large adds
                                       64 MiB; --ccl-sizes replaces them); integers, bool, max
                                       and min exact, float sum/prod/avg within
                                       n * eps * sum|x| (ccl_cases.py)
  inplace/<collective>/<dtype>         all_reduce, broadcast, reduce (send == recv) and
                                       all_gather (send inside recv at rank * count)
  ordering/<collective>                on a created stream: a kernel writes the input right
                                       before the collective, one reads its output right after,
                                       no host synchronization in between
  error/<check>                        bad root, bad peer, bad reduction, AVG of bool, and (own
                                       tables) a bad dtype code: an error status, not a crash,
                                       and the communicator still works afterwards
  group/send_recv/n<count>             (own tables) group_start, send + recv around the ring,
                                       group_end, through the table itself
  busbw/<collective>                   algbw and busbw in nccl-tests' convention (all_reduce
                                       x 2(n-1)/n; all_gather, reduce_scatter, all_to_all
                                       x (n-1)/n; broadcast x 1), float32, 64 KiB .. 4 MiB
                                       (64 MiB with --ccl-large); printed after the run
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..ccl_cases import (
    BUSBW_BYTES,
    BUSBW_COLLECTIVES,
    BUSBW_LARGE_BYTES,
    DTYPES,
    OPS,
    ROOTED_OPS,
    sizes,
)
from ..model import Case, Result, Status, Target

NAME = "ccl"
DEFAULT_RANKS = 2
STARTUP_TIMEOUT_S = 90.0
ERROR_CHECKS = ("broadcast_bad_root", "reduce_bad_root", "send_bad_peer", "all_reduce_bad_op",
                "all_reduce_bool_avg", "bad_dtype")
INPLACE = ("all_reduce", "broadcast", "reduce", "all_gather")
INPLACE_COUNT = 1023
ORDERING = ("all_reduce", "broadcast", "all_gather", "send_recv")
ORDERING_COUNT = 65537


def case_list(counts: list[int] | None = None, large: bool = False,
              dtypes: list[str] | None = None) -> list[Case]:
    """Every case of the suite, in the order the ranks run them (`dtypes`: --dtype narrows
    the per-dtype cases)."""
    out = [Case(NAME, "comm_init", {"run": "comm_init"})]

    def coll(kind: str, op: str | None, dtype: str, count: int, inplace: bool = False) -> Case:
        name = (f"inplace/{kind}" if inplace else kind) + (f"/{op}" if op else "") + \
            f"/{dtype}" + ("" if inplace else f"/n{count}")
        params = {"run": "collective", "collective": kind, "dtype": dtype, "count": count,
                  "inplace": inplace}
        if op:
            params["op"] = op
        return Case(NAME, name, params)

    chosen = [d for d in DTYPES if not dtypes or d in dtypes]
    for dtype in chosen:
        ns = sizes(dtype, counts, large)
        for c in ns:
            out += [coll("all_reduce", op, dtype, c) for op in OPS
                    if not (dtype == "bool" and op == "avg")]
            out.append(coll("broadcast", None, dtype, c))
            out += [coll("reduce", op, dtype, c) for op in ROOTED_OPS]
            out.append(coll("all_gather", None, dtype, c))
            out += [coll("reduce_scatter", op, dtype, c) for op in ROOTED_OPS]
            out.append(coll("all_to_all", None, dtype, c))
            out.append(coll("send_recv", None, dtype, c))
    # --ccl-sizes: in-place and ordering cases use its largest count
    mid = (INPLACE_COUNT, ORDERING_COUNT) if counts is None else (max(*counts, 1),) * 2
    for dtype in chosen:
        for kind in INPLACE:
            op = "max" if kind in ("all_reduce", "reduce") else None
            out.append(coll(kind, op, dtype, mid[0], inplace=True))
    out += [Case(NAME, f"ordering/{k}", {"run": "ordering", "collective": k,
                                         "count": mid[1]}) for k in ORDERING]
    out += [Case(NAME, f"error/{c}", {"run": "error", "check": c}) for c in ERROR_CHECKS]
    out += [Case(NAME, f"group/send_recv/n{c}", {"run": "group", "count": c})
            for c in sizes("float32", counts, large)]
    busbw = [b for b in (*BUSBW_BYTES, *(BUSBW_LARGE_BYTES if large else ()))
             if counts is None or b <= max(max(counts, default=0) * 4, BUSBW_BYTES[0])]
    out += [Case(NAME, f"busbw/{k}", {"run": "busbw", "collective": k, "bytes": busbw,
                                      "timeout_scale": 4}) for k in BUSBW_COLLECTIVES]
    return out


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    return case_list(options.get("ccl_sizes"), bool(options.get("ccl_large")),
                     options.get("dtypes"))


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    """Cases of this suite run on N ranks (run_batch); a lone worker cannot run one."""
    return Result(case, Status.ERROR, "hwcheck error: ccl cases run under mpirun "
                  "(suites/ccl.py:run_batch), not in a worker")


# ---- the launch -----------------------------------------------------------------------------

def launch_problem() -> str | None:
    """Why ranks cannot be launched here (None when they can)."""
    if shutil.which("mpirun") is None and shutil.which("mpiexec") is None:
        return "mpirun not found (Open MPI: openmpi-bin; MPICH: mpich)"
    from hwport.distributed.env import adapter_path

    if not adapter_path("mpi").exists():
        return (f"the MPI adapter was not built ({adapter_path('mpi')}); the ranks bootstrap "
                f"through it")
    return None


def _environment(target: Target, timeout: float) -> dict[str, str]:
    from hwport.distributed.launch import launch_environment

    env = launch_environment()  # as root and in containers, as the launcher does
    env.update(target.env)
    if target.plugin_path:
        env["HWPORT_PLUGIN_PATH"] = target.plugin_path
    env["HWPORT_CCL_DEVICE_TYPE"] = target.device_type
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # ranks may outnumber the cores
    env.setdefault("HWPORT_CCL_TIMEOUT", f"{max(5.0, timeout * 0.8):g}")  # the adapter's watchdog
    env.setdefault("PYTHONFAULTHANDLER", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _merge(case: Case, recs: dict[int, dict[str, Any]], nranks: int) -> Result:
    """One result from the ranks' verdicts: the worst status; a FAIL names its rank."""
    order = ("FAIL", "ERROR", "NOT_SUPPORTED", "PASS")
    worst = min((r["status"] for r in recs.values()), key=order.index)
    bad = sorted(r for r, rec in recs.items() if rec["status"] == worst)
    duration = max(rec.get("duration_s", 0.0) for rec in recs.values())
    if worst == "PASS":
        return Result(case, Status.PASS, "", duration, dict(recs.get(0, recs[bad[0]])["details"]))
    first = recs[bad[0]]
    others = f" (also rank(s) {', '.join(map(str, bad[1:]))})" if len(bad) > 1 else ""
    prefix = f"rank {bad[0]} of {nranks}: " if nranks > 1 else ""
    details = dict(first.get("details", {}))
    details["ranks"] = bad
    return Result(case, Status(worst), prefix + first["message"] + others, duration, details)


class _Launch:
    """One mpirun over `cases`; reads the ranks' JSON lines as they come."""

    def __init__(self, target: Target, cases: list[Case], nranks: int, timeout: float):
        self.nranks = nranks
        self.dir = Path(tempfile.mkdtemp(prefix="hwcheck_ccl_"))
        (self.dir / "cases.json").write_text(json.dumps([c.to_json() for c in cases]))
        mpirun = shutil.which("mpirun") or shutil.which("mpiexec") or "mpirun"
        self.command = [mpirun, "--oversubscribe", "-n", str(nranks), sys.executable, "-m",
                        "hwport.conformance.ccl_worker", str(self.dir / "cases.json"),
                        str(self.dir)]
        self.log = open(self.dir / "mpirun.log", "wb")
        self.proc = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=_environment(target, timeout), start_new_session=True)
        self.offsets = [0] * nranks
        self.ready: dict[int, dict[str, Any]] = {}
        self.got: dict[int, dict[int, dict[str, Any]]] = {}

    def poll(self) -> None:
        for r in range(self.nranks):
            path = self.dir / f"rank{r}.jsonl"
            if not path.exists():
                continue
            with open(path, "rb") as f:
                f.seek(self.offsets[r])
                data = f.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[r] += end + 1
            for line in data[:end].splitlines():
                rec = json.loads(line)
                if rec.get("ready"):
                    self.ready[r] = rec
                else:
                    self.got.setdefault(rec["i"], {})[r] = rec

    def complete(self, i: int) -> bool:
        return len(self.got.get(i, {})) == self.nranks

    def output_tail(self, limit: int = 3000) -> str:
        self.log.flush()
        text = (self.dir / "mpirun.log").read_bytes()[-limit:]
        return text.decode("utf-8", "replace").strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        for rec in self.ready.values():  # ranks mpirun started: never left behind
            try:
                os.kill(int(rec["pid"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, KeyError, ValueError):
                pass
        self.proc.wait()

    def finish(self, wait: float = 30.0) -> None:
        """Every case is in: let the ranks leave (their last barrier, MPI_Finalize)."""
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        self.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_batch(target: Target, cases: list[Case], options: dict[str, Any],
              emit: Callable[[Case, Result], None]) -> None:
    """Runs the suite's selected cases on options["ranks"] ranks, emitting each result as all
    ranks finish it; restarts mpirun after a CRASH or TIMEOUT with the cases left."""
    nranks = int(options.get("ranks") or DEFAULT_RANKS)
    timeout = float(options.get("timeout") or 60.0)
    problem = launch_problem()
    if problem is not None:
        for c in cases:
            emit(c, Result(c, Status.ERROR, f"hwcheck error: cannot launch the ranks: {problem}"))
        return
    left = list(cases)
    while left:
        launch = _Launch(target, left, nranks, timeout)
        done = 0
        try:
            last = time.monotonic()
            allowance = STARTUP_TIMEOUT_S
            while done < len(left):
                launch.poll()
                while done < len(left) and launch.complete(done):
                    emit(left[done], _merge(left[done], launch.got[done], nranks))
                    done += 1
                    last = time.monotonic()
                    allowance = 0.0
                if done == len(left):
                    break
                scale = float(left[done].params.get("timeout_scale", 1))
                if launch.proc.poll() is not None:
                    launch.poll()
                    if launch.complete(done):
                        continue
                    status, what = Status.CRASH, \
                        f"mpirun ({nranks} ranks) {_describe(launch.proc.returncode)}"
                elif time.monotonic() - last > allowance + timeout * scale:
                    status, what = Status.TIMEOUT, \
                        f"no rank finished the case within {timeout * scale:g} s"
                else:
                    time.sleep(0.02)
                    continue
                launch.kill()
                launch.poll()
                finished = sorted(launch.got.get(done, {}))
                tail = launch.output_tail()
                if len(launch.ready) < nranks and done == 0 and status == Status.CRASH:
                    # the ranks never started: nothing would go differently a second time
                    for c in left:
                        emit(c, Result(c, Status.ERROR, f"hwcheck error: the ranks did not "
                                       f"start ({what}); mpirun's output (tail):\n{tail}"))
                    return
                case = left[done]
                msg = (f"{what} while running the case" +
                       (" (timed out; mpirun was killed)" if status == Status.TIMEOUT else "") +
                       f"; ranks that finished it: {finished or 'none'}")
                emit(case, Result(case, status, msg + (f"; mpirun's output (tail):\n{tail}"
                                                       if tail else ""),
                                  details={"finished_ranks": finished, "output_tail": tail}))
                done += 1
                break
        finally:
            if done == len(left):
                launch.finish()
            launch.close()
        left = left[done:]


def _describe(returncode: int | None) -> str:
    from ..runner import describe_exit

    return describe_exit(returncode)
