"""The dialects PIR ships: builtin, pd_op (generated from phi_ops/ops.yaml), cf, kernel, cinn."""
