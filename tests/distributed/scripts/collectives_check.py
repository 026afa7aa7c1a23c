"""Every collective x dtype x size on each place, against numpy (run under mpirun).

Each rank's input is a function of (rank, case), so every rank can compute every other rank's
input and hence the exact expected result. Prints 'CHECKED <n>' on success; raises otherwise.

    mpirun -n 4 python collectives_check.py --places custom:cpu --sizes 0,1,17,4099
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import ml_dtypes
import numpy as np

import hwport
import hwport.distributed as dist

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
NUMPY = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
         "int32": np.int32, "int64": np.int64, "float16": np.float16,
         "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
OPS = {"SUM": dist.ReduceOp.SUM, "MAX": dist.ReduceOp.MAX, "MIN": dist.ReduceOp.MIN,
       "PROD": dist.ReduceOp.PROD, "AVG": dist.ReduceOp.AVG}


def data(rank: int, case: int, n: int, dtype: str, op: str = "SUM") -> np.ndarray:
    rng = np.random.default_rng(1000 * case + rank)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(np.bool_)
    if op == "PROD":  # keep products exact and in range
        values = rng.choice([-1, 1, 2], n) if dtype not in ("uint8",) else rng.choice([1, 2], n)
    elif dtype in ("float16", "bfloat16"):  # sums over ranks stay exact in 8 mantissa bits
        values = rng.integers(-8, 8, n) * 2.0
    elif dtype in ("int8", "uint8"):
        values = rng.integers(0 if dtype == "uint8" else -20, 20, n)
    else:
        values = rng.integers(-1000, 1000, n)
    if dtype in ("float32", "float64"):
        values = values / 8.0  # exact in every float type for |v| < 128
    return values.astype(NUMPY[dtype])


def reduce_np(arrays: list[np.ndarray], op: str, dtype: str) -> np.ndarray:
    wide = [a.astype(np.float64) if dtype.startswith(("float", "bfloat")) else a.astype(np.int64)
            for a in arrays]
    if dtype == "bool":
        stack = np.stack(arrays)
        out = stack.any(0) if op in ("SUM", "MAX") else stack.all(0)
        return out
    stack = np.stack(wide)
    if op == "SUM":
        out = stack.sum(0)
    elif op == "PROD":
        out = stack.prod(0)
    elif op == "MAX":
        out = stack.max(0)
    elif op == "MIN":
        out = stack.min(0)
    else:  # AVG: integer division truncates toward zero
        total = stack.sum(0)
        out = total / len(arrays) if dtype.startswith(("float", "bfloat")) else np.trunc(
            total / len(arrays))
    return out.astype(NUMPY[dtype])


def check(got: np.ndarray, want: np.ndarray, what: str, dtype: str) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if dtype in ("float16", "bfloat16"):
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2, atol=1e-2)
    elif dtype.startswith("float"):
        ok = np.allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))[:5]
        raise AssertionError(f"{what}: mismatch at {bad}: got {got.reshape(-1)[bad]}, "
                             f"want {want.reshape(-1)[bad]}")


def run(place: str, sizes: list[int], dtypes: list[str], group: dist.Group | None) -> int:
    g = group or dist.get_group(0)
    if not g.is_member():
        return 0
    me, n, ranks = g.rank, g.nranks, g.ranks
    checked = 0
    case = 0

    def t(array: np.ndarray) -> hwport.Tensor:
        return hwport.to_tensor(array, place=None if place == "default" else place)

    for dtype in dtypes:
        for size in sizes:
            for op in ["SUM", "MAX", "MIN", "PROD", "AVG"]:
                if dtype == "bool" and op == "AVG":
                    continue
                case += 1
                x = t(data(me, case, size, dtype, op))
                dist.all_reduce(x, op=OPS[op], group=group)
                want = reduce_np([data(r, case, size, dtype, op) for r in range(n)], op, dtype)
                check(x.numpy(), want, f"all_reduce {op} {dtype}[{size}] on {place}", dtype)
                checked += 1
            # reduce to the last rank of the group (global rank)
            case += 1
            x = t(data(me, case, size, dtype))
            mine = x.numpy().copy()
            dist.reduce(x, dst=ranks[-1], op=dist.ReduceOp.MAX, group=group)
            want = reduce_np([data(r, case, size, dtype) for r in range(n)], "MAX", dtype)
            check(x.numpy(), want if me == n - 1 else mine, f"reduce {dtype}[{size}]", dtype)
            # broadcast from the group's second rank
            case += 1
            src = min(1, n - 1)
            x = t(data(me, case, size, dtype))
            dist.broadcast(x, src=ranks[src], group=group)
            check(x.numpy(), data(src, case, size, dtype), f"broadcast {dtype}[{size}]", dtype)
            # all_gather into an empty list
            case += 1
            parts: list[hwport.Tensor] = []
            dist.all_gather(parts, t(data(me, case, size, dtype)), group=group)
            assert len(parts) == n
            for r in range(n):
                check(parts[r].numpy(), data(r, case, size, dtype), f"all_gather {dtype}", dtype)
            # reduce_scatter
            case += 1
            inputs = [data(me * n + j, case, size, dtype) for j in range(n)]
            out = t(np.zeros(size, NUMPY[dtype]))
            dist.reduce_scatter(out, [t(a) for a in inputs], group=group)
            want = reduce_np([data(r * n + me, case, size, dtype) for r in range(n)], "SUM",
                             dtype)
            check(out.numpy(), want, f"reduce_scatter {dtype}[{size}]", dtype)
            # alltoall
            case += 1
            outs: list[hwport.Tensor] = []
            dist.alltoall(outs, [t(data(me * n + j, case, size, dtype)) for j in range(n)],
                          group=group)
            for r in range(n):
                check(outs[r].numpy(), data(r * n + me, case, size, dtype),
                      f"alltoall {dtype}[{size}]", dtype)
            # send / recv around the ring, posted together
            case += 1
            right, left = ranks[(me + 1) % n], ranks[(me - 1) % n]
            incoming = t(np.zeros(size, NUMPY[dtype]))
            tasks = [dist.isend(t(data(me, case, size, dtype)), dst=right, group=group),
                     dist.irecv(incoming, src=left, group=group)]
            for task in tasks:
                task.wait()
            check(incoming.numpy(), data((me - 1) % n, case, size, dtype),
                  f"send/recv {dtype}[{size}]", dtype)
            # the same exchange as one batch, receive posted first on every rank
            case += 1
            incoming = t(np.zeros(size, NUMPY[dtype]))
            dist.batch_isend_irecv([
                dist.P2POp(dist.irecv, incoming, left, group),
                dist.P2POp(dist.isend, t(data(me, case, size, dtype)), right, group)])
            check(incoming.numpy(), data((me - 1) % n, case, size, dtype),
                  f"batch_isend_irecv {dtype}[{size}]", dtype)
            checked += 7
    return checked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--places", default="default",
                        help="places; 'default': this rank's device")
    parser.add_argument("--sizes", default="0,1,17,4099")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--subgroup", action="store_true",
                        help="also run on the group of the odd ranks")
    args = parser.parse_args()
    dist.init_parallel_env()
    sizes = [int(s) for s in args.sizes.split(",")]
    dtypes = args.dtypes.split(",")
    total = 0
    for place in args.places.split(","):
        total += run(place, sizes, dtypes, None)
    if args.subgroup:
        odd = dist.new_group([r for r in range(dist.get_world_size()) if r % 2 == 1])
        for place in args.places.split(","):
            total += run(place, sizes, dtypes, odd)
    if args.subgroup:
        total += check_split()
    dist.barrier()
    print(f"rank {dist.get_rank()} CHECKED {total}", flush=True)


def check_split() -> int:
    """comm_split of the world's communicator by rank parity, keys reversing the order."""
    world = dist.get_group(0)
    place = str(hwport.get_device())
    comm = world._comm(place, "split")
    me, n = world.rank, world.nranks
    members = [r for r in range(n) if r % 2 == me % 2]
    new_rank = sorted(members, reverse=True).index(me)
    split = comm.split(me % 2, -me, new_rank, len(members))
    assert split.rank == new_rank and split.nranks == len(members)
    x = hwport.to_tensor(np.array([float(me), 1.0], np.float32))
    split.all_reduce(x, x, 0)
    check(x.numpy(), np.array([sum(members), len(members)], np.float32), "split all_reduce",
          "float32")
    # rank order of the split communicator follows the keys: gather shows it
    out = hwport.to_tensor(np.zeros(len(members), np.float32))
    split.all_gather(hwport.to_tensor(np.array([float(me)], np.float32)), out)
    check(out.numpy(), np.array(sorted(members, reverse=True), np.float32), "split order",
          "float32")
    # color < 0: no communicator
    assert comm.split(-1, 0, -1, 0) is None
    return 2


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # noqa: BLE001 (one failing rank ends the job; peers would wait)
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
