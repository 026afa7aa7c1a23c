"""``python -m hwport.distributed.launch --nproc_per_node N script.py [args]``: runs the script on
N ranks through mpirun (which does the bootstrap; several machines through ``--hostfile``).

It adds ``--oversubscribe`` when N exceeds this machine's cores, and the settings Open MPI needs
as root and in containers, then waits for mpirun and exits with its status.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def build_command(args: argparse.Namespace, script_args: list[str]) -> list[str]:
    """The mpirun command line for ``args`` (split out so it can be checked)."""
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if mpirun is None:
        raise SystemExit(
            "hwport.distributed.launch: mpirun not found (Debian: apt-get install openmpi-bin)"
        )
    nprocs = args.nproc_per_node * (args.nnodes or 1)
    command = [mpirun, "-n", str(nprocs)]
    if args.hostfile:
        command += ["--hostfile", args.hostfile]
    elif args.ips:
        hosts = ",".join(f"{ip}:{args.nproc_per_node}" for ip in args.ips.split(","))
        command += ["--host", hosts]
    if not args.hostfile and not args.ips and nprocs > (os.cpu_count() or 1):
        command.append("--oversubscribe")
    return [*command, sys.executable, args.script, *script_args]


def launch_environment() -> dict[str, str]:
    environment = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        environment.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        environment.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # Containers forbid the cross-process memory attach of Open MPI's shared-memory transport.
    environment.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    return environment


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m hwport.distributed.launch",
        description="Run a training script on several ranks (through mpirun).",
    )
    parser.add_argument("--nproc_per_node", type=int, default=1,
                        help="ranks per machine (default 1)")
    parser.add_argument("--nnodes", type=int, default=None, help="machines (with --hostfile)")
    parser.add_argument("--hostfile", default=None, help="an mpirun hostfile")
    parser.add_argument("--ips", default=None, help="comma-separated machine addresses")
    parser.add_argument("script", help="the Python script")
    args, rest = parser.parse_known_args(argv)
    if args.nproc_per_node < 1:
        parser.error("--nproc_per_node must be at least 1")
    return args, rest


def main(argv: list[str] | None = None) -> int:
    args, rest = parse(sys.argv[1:] if argv is None else argv)
    command = build_command(args, rest)
    return subprocess.call(command, env=launch_environment())


if __name__ == "__main__":
    sys.exit(main())
