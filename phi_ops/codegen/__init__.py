"""Code generators: everything repetitive that phi_ops/ops.yaml, the single source of truth,
determines (C headers, the reference plugins' kernel tables, Python op functions, docs).

Each generator is a module runnable as a script. gen_cpu_elementwise (the CPU plugin's
elementwise op table, elementwise_ops.h) runs at build time from CMake, so it depends on nothing
but Python and PyYAML (not on the hwport package).
"""
