"""SPMD rules derived from ops.yaml's `spmd` dim mappings (one engine for every op).

`infer_spmd(op, inputs, attrs, mesh_shape)`: from each input's global shape, dtype and
TensorDistAttr (dims_mapping per tensor dim + partial mesh dims), the placements the op needs
its inputs in (what to reshard) and the placements of its outputs. The spec labels every tensor
dim (letters, `...` dims numpy-broadcast from the right); a label is sharded over the mesh dim
the first input that shards it uses (conflicts: the first wins, the others are resharded);
a sharded label the outputs do not keep is contracted: the outputs are Partial over its mesh
dim. An op without a spec is run replicated, counted in `spmd_stats()`, never an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phi_ops.infer_meta import Meta, infer
from phi_ops.schema import OpDef, SpmdClause, SpmdOperand, SpmdSpec, load_ops

from .dist_attr import TensorDistAttr
from .placement import ReduceType, reduce_type_of

Label = str | None
AttrList = TensorDistAttr | list[TensorDistAttr] | None

# Contractions whose local results need every shard the same size (a mean of shard means; a
# max of an empty shard has no value).
_EVEN_REDUCES = {"avg", "max", "min"}
_FLOATS = {"float16", "bfloat16", "float32", "float64"}
_STATS: dict[str, Counter[str]] = {"derived": Counter(), "fallback": Counter()}


@dataclass(frozen=True)
class DistMeta:
    """One input of a distributed call: global shape, dtype and dist attr."""
    shape: tuple[int, ...]
    dist_attr: TensorDistAttr
    dtype: str = "float32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dist_attr.ndim != len(self.shape):
            raise ValueError(f"dist_attr {self.dist_attr} does not fit shape {list(self.shape)}")


@dataclass
class SpmdResult:
    """inputs: the dist attr each input must have for the local op (a list for a variadic
    input, None for an absent optional one); outputs: the outputs' dist attrs (a list for a
    variadic output); rule: "spec" or "fallback" (no spec: everything replicated); attrs: what
    the local op runs with (`local_attrs` makes the shape attributes per rank)."""
    inputs: list[AttrList]
    outputs: list[TensorDistAttr | list[TensorDistAttr]]
    rule: str = "spec"
    notes: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)


class SpmdError(ValueError):
    """A spec that does not fit a call (a bug in ops.yaml's `spmd`, named with the op)."""


def spmd_stats(kind: str | None = None) -> dict[str, Any]:
    """Rule calls per op since the last reset: kind="fallback" (ran replicated: the op has no
    spec), "derived" (from its spec), or None for both ({"derived": ..., "fallback": ...})."""
    if kind is None:
        return {k: dict(v) for k, v in _STATS.items()}
    if kind not in _STATS:
        raise ValueError(f"spmd_stats: kind must be one of {sorted(_STATS)}, got {kind!r}")
    return dict(_STATS[kind])


def reset_spmd_stats() -> None:
    for c in _STATS.values():
        c.clear()


def ops_without_spmd() -> list[str]:
    """The ops of ops.yaml that have no `spmd` (they run replicated)."""
    return sorted(n for n, op in load_ops().items() if op.spmd is None)


# ---- helpers ------------------------------------------------------------------------------

def _attrs(op: OpDef, given: Mapping[str, Any]) -> dict[str, Any]:
    """Every attribute (defaults filled; an int or tuple for an `ints` attr made a list, as the
    dispatcher does; split's `_sizes` flag: a list of sizes vs a count of equal parts)."""
    unknown = set(given) - set(op.attr_map) - {"_sizes"}
    if unknown:
        raise ValueError(f"{op.name}: unknown attribute(s) {sorted(unknown)}")
    out: dict[str, Any] = {}
    for a in op.attrs:
        if a.name in given:
            v = given[a.name]
        elif not a.required:
            v = a.default
        else:
            raise ValueError(f"{op.name}: attribute {a.name!r} is required")
        if a.type == "ints" and v is not None:
            v = [int(i) for i in v] if isinstance(v, list | tuple) else [int(v)]
        out[a.name] = v
    if op.name == "split":
        out["_sizes"] = bool(given.get("_sizes", isinstance(given.get("sections"),
                                                             list | tuple)))
    return out


def _cond(clause: SpmdClause, attrs: Mapping[str, Any], present: Mapping[str, bool]) -> bool:
    if clause.cond is None:
        return True
    negated, name, cmp, word = clause.cond
    value: Any = present[name] if name in present and name not in attrs else attrs.get(name)
    if cmp is None:
        result = bool(value)
    else:
        result = (str(value) == word) == (cmp == "==")
    return result != negated


def _ints(v: Any) -> list[int] | None:
    if v is None:
        return None
    if isinstance(v, list | tuple):
        return [int(i) for i in v]
    return [int(v)]


def _select(arg: str, labels: list[Label], attrs: Mapping[str, Any]) -> list[Label]:
    """A selector's labels among `labels` (the first input's), or a letter itself."""
    kind, sep, val = arg.partition(":")
    if not sep:
        return [arg]
    n = len(labels)
    if kind == "last":
        k = int(val) if val.isdigit() else int(attrs[val])
        return labels[max(n - k, 0):]
    raw = attrs.get(val)
    if kind in ("axis", "dims"):
        axes = _ints(raw)
        if not axes:  # None or []: `axis` means every dim, `dims` none
            return list(labels) if kind == "axis" else []
        return [labels[a % n] for a in axes] if n else []
    if kind == "pairs":  # pad: (before, after) per dim from the first
        p = _ints(raw) or []
        return [labels[i] for i in range(min(n, len(p) // 2)) if p[2 * i] or p[2 * i + 1]]
    if kind == "repeats":  # tile: repeats right-aligned with the dims (1s prepended)
        reps = _ints(raw) or []
        lead = len(reps) - n
        return [lab for i, lab in enumerate(labels) if lead + i >= 0 and reps[lead + i] != 1]
    raise SpmdError(f"unknown selector {arg!r}")


def _reshape_labels(src: Sequence[int], dst: Sequence[int], labels: list[Label]
                    ) -> tuple[list[Label], list[Label]]:
    """Reshape's mapping: blocks of dims with equal products; a block's first non-1 input dim
    may shard its first non-1 output dim (both evenly: checked when the mesh dim is known).
    Returns (input labels, output labels); the other dims of a block are replicated."""
    in_l: list[Label] = [None] * len(src)
    out_l: list[Label] = [None] * len(dst)
    if 0 in src:
        return in_l, out_l
    si = [i for i, d in enumerate(src) if d != 1]
    di = [j for j, d in enumerate(dst) if d != 1]
    a = b = 0
    while a < len(si) and b < len(di):
        a0, b0 = a, b
        pa, pb = src[si[a]], dst[di[b]]
        a, b = a + 1, b + 1
        while pa != pb:
            if pa < pb:
                pa *= src[si[a]]
                a += 1
            else:
                pb *= dst[di[b]]
                b += 1
        lab = labels[si[a0]]
        in_l[si[a0]] = lab
        out_l[di[b0]] = lab
    return in_l, out_l


# ---- the engine ---------------------------------------------------------------------------

@dataclass
class _Operand:
    name: str  # the op's input name
    labels: list[Label]
    shape: tuple[int, ...]
    attr: TensorDistAttr | None  # the given dist attr (inputs only)
    dtype: str = "float32"


def _operand_labels(spec: SpmdOperand, letters: str, rank: int, erank: int | None
                    ) -> list[Label]:
    """Labels of a tensor of `rank` dims: `...` dims as "@k" (k counted from the right end of
    the ellipsis), then the letters (leading letters dropped when the rank is short)."""
    if spec.replicated:
        return [None] * rank
    if rank < len(letters):
        letters = letters[len(letters) - rank:]
    e = rank - len(letters) if erank is None else erank
    if e < 0 or (e and not spec.ellipsis) or e + len(letters) != rank:
        raise SpmdError(f"operand {spec} does not fit a tensor of {rank} dims")
    return [f"@{e - 1 - j}" for j in range(e)] + list(letters)


def infer_spmd(op_name: str, inputs: Sequence[DistMeta | Sequence[DistMeta] | None],
               attrs: Mapping[str, Any] | None = None,
               mesh_shape: Sequence[int] | None = None) -> SpmdResult:
    """The SPMD rule of `op_name` for this call (see the module docstring). mesh_shape: the
    mesh's shape (needed for the even-split checks; by default every mesh dim counts as
    dividing everything)."""
    op = load_ops()[op_name]
    attrs = _attrs(op, attrs or {})
    inputs = list(inputs) + [None] * (len(op.inputs) - len(inputs))
    metas: list[Any] = []
    for m in inputs:
        if m is None:
            metas.append(None)
        elif isinstance(m, DistMeta):
            metas.append(Meta(m.shape, m.dtype))
        else:
            metas.append([Meta(t.shape, t.dtype) for t in m])
    plan = infer(op, metas, attrs)
    out_shapes = [o.shape for o in plan.outputs]
    if op.name == "squeeze" and not attrs["axis"] and metas[0] is not None:
        # "every size-1 dim" of the global x, named (a shard may have size 1 where x has not);
        # none: a local squeeze would drop a shard's size-1 dims, so x is kept whole
        ones = [i for i, d in enumerate(metas[0].shape) if d == 1]
        attrs = dict(attrs, axis=ones or list(range(len(metas[0].shape))))
    if op.spmd is None:
        _STATS["fallback"][op.name] += 1
        res = _replicated(op, inputs, out_shapes, ["no spmd spec: replicated"])
    else:
        _STATS["derived"][op.name] += 1
        res = _derive(op, op.spmd, inputs, attrs, out_shapes, mesh_shape)
    res.attrs = dict(attrs)
    return res


def _replicated(op: OpDef, inputs: list[Any], out_shapes: list[tuple[int, ...]],
                notes: list[str]) -> SpmdResult:
    req: list[AttrList] = []
    for m in inputs:
        if m is None:
            req.append(None)
        elif isinstance(m, DistMeta):
            req.append(TensorDistAttr.replicated(len(m.shape)))
        else:
            req.append([TensorDistAttr.replicated(len(t.shape)) for t in m])
    outs: list[Any] = [TensorDistAttr.replicated(len(s)) for s in out_shapes]
    if op.outputs[0].variadic:
        outs = [outs]
    return SpmdResult(req, outs, "fallback", notes)


def _derive(op: OpDef, spec: SpmdSpec, inputs: list[Any], attrs: dict[str, Any],
            out_shapes: list[tuple[int, ...]], mesh_shape: Sequence[int] | None) -> SpmdResult:
    names = [i.name for i in op.inputs]
    present = {n: inputs[k] is not None for k, n in enumerate(names)}
    clauses = [c for c in spec.clauses if _cond(c, attrs, present)]

    # 1. each input's letters (vec drops a 1-D operand's letter, swap transposes the last two)
    letters = {n: o.letters for n, o in zip(names, spec.inputs, strict=True)}
    dropped: set[str] = set()
    for c in clauses:
        if c.name == "vec":
            m = inputs[names.index(c.args[0])]
            if m is not None and len(m.shape) == 1:
                letters[c.args[0]] = letters[c.args[0]].replace(c.args[1], "")
                dropped.add(c.args[1])
    for c in clauses:
        if c.name == "swap":
            m = inputs[names.index(c.args[0])]
            s = letters[c.args[0]]
            if m is not None and len(m.shape) >= 2 and len(s) >= 2:
                letters[c.args[0]] = s[:-2] + s[-1] + s[-2]

    ops_in: list[_Operand] = []
    for n, ospec, m in zip(names, spec.inputs, inputs, strict=True):
        for t in ([] if m is None else [m] if isinstance(m, DistMeta) else list(m)):
            ops_in.append(_Operand(n, _operand_labels(ospec, letters[n], len(t.shape), None),
                                   t.shape, t.dist_attr, t.dtype))
    erank = max((sum(1 for lab in o.labels if lab and lab[0] == "@") for o in ops_in),
                default=0)

    # 2. outputs: from the spec's template, unless a clause defines them
    defining = [c for c in clauses if c.name in ("reduce", "permute", "reshape", "insert",
                                                 "index")]
    out_specs = list(spec.outputs)
    if op.outputs[0].variadic:
        out_specs = out_specs * len(out_shapes)
    ops_out: list[_Operand] = []
    for ospec, shp in zip(out_specs, out_shapes, strict=True):
        out_letters = "".join(ch for ch in ospec.letters if ch not in dropped)
        labels = [] if defining else _operand_labels(ospec, out_letters, len(shp), None)
        ops_out.append(_Operand("", labels, shp, None))

    # 3. sizes: a dim of size 1 where its label is larger elsewhere is broadcast (replicated);
    # a label whose sizes disagree otherwise is replicated
    sizes: dict[str, set[int]] = {}
    for o in ops_in + ([] if defining else ops_out):
        for lab, d in zip(o.labels, o.shape, strict=True):
            if lab is not None:
                sizes.setdefault(lab, set()).add(d)
    replicated: set[str] = set()
    for lab, ss in sizes.items():
        if len(ss - {1}) > 1:
            replicated.add(lab)
    def bsize(lab: str, default: int = 1) -> int:  # the label's size after broadcasting
        return max(sizes.get(lab, {default}) - {1}, default=1 if lab in sizes else default)

    for o in ops_in:
        o.labels = [None if lab is not None and d == 1 and bsize(lab) != 1 else lab
                    for lab, d in zip(o.labels, o.shape, strict=True)]

    # 4. clauses
    first = ops_in[0].labels if ops_in else []
    reduce_type: dict[str, str] = {}
    even: dict[str, list[int]] = {}
    groups: list[set[str]] = []
    addends: set[str] = set()
    for c in clauses:
        if c.name == "replicate":
            for a in c.args:
                replicated.update(lab for lab in _select(a, first, attrs) if lab)
        elif c.name == "reduce":
            red = [lab for lab in _select(c.args[0], first, attrs) if lab]
            keep = bool(attrs.get(c.args[1])) if len(c.args) == 3 else False
            for lab in red:
                reduce_type[lab] = c.args[-1]
            for k, (ospec, o) in enumerate(zip(out_specs, ops_out, strict=True)):
                tmpl = _operand_labels(ospec, ospec.letters, erank + len(ospec.letters),
                                       erank)
                o.labels = [None if lab in red else lab for lab in tmpl
                            if keep or lab not in red]
                if len(o.labels) != len(out_shapes[k]):
                    # a 0-d input reduces nothing; a label of a dropped dim keeps nothing
                    o.labels = [None] * len(out_shapes[k])
        elif c.name == "permute":
            perm = _ints(attrs.get(c.args[0]))
            n = len(first)
            perm = list(range(n))[::-1] if perm is None else [p % n for p in perm]
            for o in ops_out:
                o.labels = [first[p] for p in perm]
        elif c.name == "reshape":
            in_l, out_l = _reshape_labels(ops_in[0].shape, ops_out[0].shape, first)
            ops_in[0].labels = in_l
            first = in_l
            ops_out[0].labels = out_l
            for o in (ops_in[0], ops_out[0]):
                for lab, d in zip(o.labels, o.shape, strict=True):
                    if lab is not None:
                        even.setdefault(lab, []).append(d)
        elif c.name == "insert":
            axis = int(attrs[c.args[0]]) % (len(first) + 1)
            for o in ops_out:
                o.labels = first[:axis] + [None] + first[axis:]
        elif c.name == "index":
            axis = int(attrs[c.args[0]]) % max(len(first), 1)
            if first:
                if first[axis]:
                    replicated.add(first[axis])
                for o in ops_out:
                    o.labels = first[:axis] + [c.args[1]] + first[axis + 1:]
        elif c.name == "linear":
            groups.append(set(c.args))
        elif c.name == "addend":
            addends.update(c.args)
    for lab, t in reduce_type.items():
        if t == "none":
            replicated.add(lab)
        elif t in _EVEN_REDUCES:
            even.setdefault(lab, []).extend(sizes.get(lab, ()))
    out_labels = {lab for o in ops_out for lab in o.labels if lab}
    contracted = {lab for o in ops_in for lab in o.labels if lab} - out_labels

    # 5. assign labels to mesh dims: the first input (in order) that shards a label decides
    assigned: dict[str, int] = {}
    taken: set[int] = set()
    notes: list[str] = []
    for o in ops_in:
        assert o.attr is not None
        for lab, mdim in zip(o.labels, o.attr.dims_mapping, strict=True):
            if mdim == -1 or lab is None or lab in replicated:
                continue
            if lab in assigned or mdim in taken:
                if assigned.get(lab) != mdim:
                    notes.append(f"{o.name}: {lab} on mesh dim {mdim} conflicts; resharded")
                continue
            n = mesh_shape[mdim] if mesh_shape is not None else 1
            if lab in even and any(s % n for s in even[lab]):
                notes.append(f"{o.name}: {lab} does not split evenly over mesh dim {mdim}")
                continue
            if lab in contracted and addends and reduce_type.get(lab, "sum") != "sum":
                continue
            assigned[lab] = mdim
            taken.add(mdim)

    # 6. partial inputs: kept (and spread to their linear group) where the op is linear in them
    in_partial: list[dict[int, ReduceType]] = [{} for _ in ops_in]
    out_partial: dict[int, ReduceType] = {}
    partial_dims = sorted({p for o in ops_in for p in (o.attr.partial if o.attr else {})})
    for p in partial_dims:
        if p in taken:
            continue
        holders = {o.name for o in ops_in if o.attr and p in o.attr.partial}
        sums = all(o.attr.partial.get(p, ReduceType.kRedSum) == ReduceType.kRedSum
                   for o in ops_in if o.attr)
        group = next((g for g in groups if holders <= g), None)
        if group is None or not sums or any(o.dtype not in _FLOATS for o in ops_in
                                            if o.name in group):
            continue  # resharded to Replicate (integer sums may wrap: not linear)
        for k, o in enumerate(ops_in):
            if o.name in group:
                in_partial[k][p] = ReduceType.kRedSum
        out_partial[p] = ReduceType.kRedSum
    for lab in sorted(contracted & set(assigned)):
        rtype = reduce_type_of(reduce_type.get(lab, "sum"))
        out_partial[assigned[lab]] = rtype
        for k, o in enumerate(ops_in):
            if o.name in addends:
                in_partial[k][assigned[lab]] = ReduceType.kRedSum

    # 7. the dist attrs
    def dims(o: _Operand) -> tuple[int, ...]:
        return tuple(assigned.get(lab, -1) if lab is not None else -1 for lab in o.labels)

    for o in ops_out:
        for lab, d in zip(o.labels, o.shape, strict=True):
            if lab in assigned and lab not in even and bsize(lab, d) != d:
                raise SpmdError(f"{op.name}: spec {spec.text!r} maps output dim of size {d} "
                                f"to {lab} of size {sorted(sizes[lab])}")
    req_flat = [TensorDistAttr(dims(o), part) for o, part in zip(ops_in, in_partial,
                                                                    strict=True)]
    req: list[AttrList] = []
    it = iter(req_flat)
    for m in inputs:
        if m is None:
            req.append(None)
        elif isinstance(m, DistMeta):
            req.append(next(it))
        else:
            req.append([next(it) for _ in m])
    outs: list[Any] = [TensorDistAttr(dims(o), out_partial) for o in ops_out]
    if op.outputs[0].variadic:
        outs = [outs]
    return SpmdResult(req, outs, "spec", notes)


# Attributes that spell the output's global shape: the local op gets the local one.
_OUTPUT_SHAPE_ATTRS = {"reshape": "shape", "expand": "shape"}


def local_attrs(op_name: str, attrs: Mapping[str, Any],
                local_out_shapes: Sequence[Sequence[int]]) -> dict[str, Any]:
    """The attributes the local op runs with on a rank whose outputs have these local shapes,
    from SpmdResult.attrs (reshape's and expand's target shape become the local one; the
    others are unchanged: the rules keep every dim an attribute depends on replicated)."""
    out = dict(attrs)
    name = _OUTPUT_SHAPE_ATTRS.get(op_name)
    if name is not None:
        out[name] = [int(d) for d in local_out_shapes[0]]
    return out
