"""Collective adapters behind the CCL table (hwport/ccl.h): ``mpi/`` (any device; host memory
directly, other devices staged) and ``nccl/`` (CUDA memory). Built as shared libraries next to
this file; ``hwport.distributed`` loads them."""
