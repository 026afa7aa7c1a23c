"""pd_op attributes as eager's call takes them.

An ops.yaml `ints` attribute that eager also takes as one int with another meaning cannot be
one attribute in the IR: split(x, 3) is 3 equal parts, split(x, [3]) one part of size 3, and
an ints attribute holds [3] for both (eager tells them apart by the Python type, `_sizes`).
pd_op gives such an op a companion int attribute for the count, as Paddle's PIR has
pd_op.split (sections: part sizes) next to pd_op.split_with_num (num): `sections` always
holds sizes, `num` (0: absent) the count. The builder maps an int to `num`."""

from __future__ import annotations

from typing import Any

# op -> (its ints attribute, the companion count attribute pd_op adds)
COUNT_ATTRS: dict[str, tuple[str, str]] = {"split": ("sections", "num")}


def given_attrs(op: str, values: dict[str, Any]) -> dict[str, Any]:
    """pd_op `op`'s attribute values (name -> Python value) as the keyword arguments of its
    eager call: a count becomes the one int eager takes."""
    pair = COUNT_ATTRS.get(op)
    if pair is None:
        return dict(values)
    ints, count = pair
    out = dict(values)
    n = out.pop(count, 0) or 0
    if n:
        if out.get(ints):
            raise ValueError(f"pd_op.{op}: give {ints} (part sizes) or {count} (a count of "
                             f"equal parts), not both; got {ints}={out[ints]}, {count}={n}")
        out[ints] = n
    return out


def meta_attrs(op: str, values: dict[str, Any]) -> dict[str, Any]:
    """The attributes infer-meta's rules take (eager's normalized form: the ints attribute a
    list, `_sizes` saying whether it holds sizes)."""
    pair = COUNT_ATTRS.get(op)
    if pair is None:
        return values
    ints = pair[0]
    out = given_attrs(op, values)
    sizes = not isinstance(out.get(ints), int)
    out[ints] = list(out.get(ints) or []) if sizes else [out[ints]]
    out["_sizes"] = sizes
    return out


def builder_kwargs(op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The builder's keyword arguments with an int given for the ints attribute moved to the
    companion count (b.pd_op.split(x, sections=3) is 3 equal parts, as eager's)."""
    pair = COUNT_ATTRS.get(op)
    if pair is None or not isinstance(kwargs.get(pair[0]), int):
        return kwargs
    ints, count = pair
    out = dict(kwargs)
    out[count] = out.pop(ints)
    return out


def recorded_kwargs(op: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes a pipeline layer sees for an eager call of `op` (dispatch's normalized
    form: `_`-prefixed keys, a count as a one-element list with `_sizes` False) as the pd_op
    builder's keyword arguments."""
    out = dict(attrs)
    pair = COUNT_ATTRS.get(op)
    if pair is not None and out.get("_sizes") is False:
        out[pair[0]] = out[pair[0]][0]
    return {k: v for k, v in out.items() if not k.startswith("_")}
