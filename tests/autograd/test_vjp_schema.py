"""ops.yaml `vjps` is checked when ops.yaml loads (phi_ops/schema.py, with the generator's
parser): a bad rule names the op and the problem."""

from __future__ import annotations

import copy

import pytest
import yaml

from hwport.phi_ops import schema


@pytest.fixture(scope="module")
def raw() -> dict:
    with open(schema.OPS_YAML, encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("rule, message", [
    ({"exp": {"y": "grad"}}, r"vjps: 'exp': 'y' is not an input of exp"),
    ({"nope": {"x": "grad"}}, r"vjps: 'nope' is not an op"),
    ({"exp": "decomposition"}, r"only a composite is differentiated through its decomposition"),
    ({"exp": {"x": "grad * no_such_name"}}, r"op 'exp': vjp of x: unknown name 'no_such_name'"),
    ({"exp": {"x": "unbroadcast(grad)"}}, r"unbroadcast\(\) takes 2 positional arguments"),
])
def test_bad_rules_are_refused(raw: dict, rule: dict, message: str) -> None:
    bad = copy.deepcopy(raw)
    bad["vjps"].update(rule)
    with pytest.raises(schema.OpsYamlError, match=message):
        schema._parse(bad)


def test_the_shipped_rules_load(raw: dict) -> None:
    assert "exp" in schema._parse(raw)
