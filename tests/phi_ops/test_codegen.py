"""Everything generated from ops.yaml is up to date, and ops.yaml itself is consistent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

GENERATORS = ["gen_python", "gen_c_header", "gen_docs"]


@pytest.mark.parametrize("generator", GENERATORS)
def test_generated_file_is_up_to_date(generator):
    proc = subprocess.run([sys.executable, "-m", f"phi_ops.codegen.{generator}", "--check"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_every_composite_has_its_decomposition():
    from hwport.phi_ops import decompositions, load_ops

    missing = [op.name for op in load_ops().values()
               if not op.is_primitive and not hasattr(decompositions, op.decompose)]
    assert missing == []


def test_primitive_set_is_small_and_listed():
    from hwport.phi_ops import load_ops, primitives

    prims = primitives()
    assert len(prims) < len(load_ops()) / 1.5
    assert {"add", "matmul", "sum", "fill", "cast", "copy", "uniform"} <= set(prims)
    assert "softmax" not in prims and "mean" not in prims


def test_ops_yaml_errors_name_the_op_and_field(tmp_path):
    from hwport.phi_ops.schema import OPS_YAML, OpsYamlError, load_ops

    text = OPS_YAML.read_text().replace("infer_meta: unary, reference: \"np.abs(x)\"",
                                        "reference: \"np.abs(x)\"", 1)
    bad = tmp_path / "ops.yaml"
    bad.write_text(text)
    with pytest.raises(OpsYamlError, match="op 'abs': missing field 'infer_meta'"):
        load_ops(str(bad))


def test_c_header_compiles_as_c99(tmp_path):
    src = tmp_path / "t.c"
    src.write_text('#include "hwport/hwport.h"\nconst char *k = HWP_OP_SUM;\n'
                   'const char *a = HWP_ATTR_NAME_AXIS;\nint main(void){return 0;}\n')
    proc = subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                           f"-I{REPO_ROOT / 'runtime' / 'include'}", str(src), "-o",
                           str(tmp_path / "t")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
