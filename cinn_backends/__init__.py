"""hwport.cinn_backends: the fusion compiler's middle and back end. A fused group of pd_op
primitives (lower_group) becomes a loop IR kernel (loop_ir), scheduled for the target
(schedule_cpu: vector CPU; schedule_simt: GPU-like groups of threads), rendered in a dialect the
device's codegen table accepts (render/: c99, opencl-c-1.2, cuda-c++17; more through the
targets registry) and launched through the plugin (runtime/include/hwport/codegen.h).
interpret runs the loop IR on numpy (the reference semantics the tests check against)."""

from __future__ import annotations


def register() -> None:
    """Makes the compiler's passes (cinn_decompose, cinn_fusion) known to PIR's pass manager
    and installs its lowering of cinn.group into lower_to_kernel. Idempotent."""
    from . import decompose, fusion, lowering  # noqa: F401 (the passes register on import)

    lowering.install()
