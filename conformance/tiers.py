"""Certification tiers: what a run of hwcheck certifies about each plugin (docs/hwcheck.md says
what each tier promises). A tier is data: the suites it requires, each with the statuses its
cases may have, plus conditions on the run; a suite that joins a tier is one line in TIERS.

A tier is "certified" when every required suite ran in full for the plugin (no -k or --dtype
narrowing it) and every case has an allowed status; "not certified" with the reasons
otherwise; "not assessed" when a required suite was not run or the tier has no checks yet."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import Status

CERTIFIED, NOT_CERTIFIED, NOT_ASSESSED = "certified", "not certified", "not assessed"
# Optional tables a plugin does not provide are NOT_SUPPORTED there, not a failure.
PASS_OR_OPTIONAL = frozenset({Status.PASS, Status.NOT_SUPPORTED})
PASS_ONLY = frozenset({Status.PASS})

# A condition: (the plugin's results, run metadata) -> reasons the tier does not hold.
Condition = Callable[[Sequence[Any], dict[str, Any]], list[str]]


@dataclass(frozen=True)
class Tier:
    name: str
    promise: str
    suites: dict[str, frozenset[Status]] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    assessed: bool = True  # False: named for a later issue, no checks yet
    # Options besides -k and --dtype that narrow the run for this tier: (option, meta key).
    narrowing: tuple[tuple[str, str], ...] = ()


def _kernels_ran_natively(results: Sequence[Any], meta: dict[str, Any]) -> list[str]:
    """No kernels case ran (partly) on the CPU fallback: the values the kernels suite checked
    must be the device's own."""
    fell = sorted({r.result.case.params.get("op", "") for r in results
                   if r.result.case.suite == "kernels"
                   and r.result.details.get("path") == "fallback"})
    return [f"kernels: {len(fell)} op(s) ran on the CPU fallback in some case: "
            f"{', '.join(fell[:10])}{' ...' if len(fell) > 10 else ''}"] if fell else []


def _collectives_ran(results: Sequence[Any], meta: dict[str, Any]) -> list[str]:
    """The ccl suite ran on at least 2 ranks, made its communicator, and all_reduce (sum) of
    float32 passed at every size: a table that answers NOT_SUPPORTED to everything, or a run
    on one rank, certifies nothing."""
    reasons = []
    ccl = {r.result.case.name: r.result.status for r in results if r.result.case.suite == "ccl"}
    if int(meta.get("ranks") or 0) < 2:
        reasons.append(f"ccl: ran on {meta.get('ranks', '?')} rank(s); certifying needs >= 2")
    if ccl.get("comm_init") != Status.PASS:
        reasons.append("ccl: comm_init did not pass")
    sums = [s for name, s in ccl.items() if name.startswith("all_reduce/sum/float32/")]
    if not sums or any(s != Status.PASS for s in sums):
        reasons.append("ccl: all_reduce/sum/float32 did not pass at every size")
    return reasons


TIERS: tuple[Tier, ...] = (
    Tier("runtime", "the device runtime (loading, devices, memory, streams and events) behaves "
         "as the C ABI documents",
         {"abi": PASS_OR_OPTIONAL, "device": PASS_OR_OPTIONAL, "memory": PASS_OR_OPTIONAL,
          "stream": PASS_OR_OPTIONAL, "transfers": PASS_OR_OPTIONAL,
          "profiler": PASS_OR_OPTIONAL}),
    Tier("kernels-native", "every op of ops.yaml, in every dtype the plugin claims, runs on the "
         "device (its own kernels, or a decomposition into them) with correct results, never on "
         "the CPU fallback",
         # guards: ops without a native kernel are NOT_SUPPORTED there (coverage judges those)
         {"kernels": PASS_ONLY, "thresholds": PASS_OR_OPTIONAL, "coverage": PASS_ONLY,
          "guards": PASS_OR_OPTIONAL},
         (_kernels_ran_natively,)),
    Tier("compiler", "fused groups compile through the plugin's codegen target and match the "
         "oracle; compile errors carry the build log; one kernel per shape class; a warm "
         "process compiles nothing",
         {"abi": PASS_OR_OPTIONAL, "compiler": PASS_ONLY}),
    Tier("collectives", "every collective of the CCL table (the plugin's own, or the host's "
         "MPI adapter over its device) is exact (integers) or within the reduction tolerance "
         "(floats) for every dtype at sizes from 0 to 4 MiB per rank on >= 2 ranks, in place "
         "too, ordered on the stream, and answers bad arguments with an error status; the "
         "table itself is well formed",
         {"abi": PASS_OR_OPTIONAL, "ccl": PASS_OR_OPTIONAL}, (_collectives_ran,),
         narrowing=(("--ccl-sizes", "ccl_sizes"),)),
    Tier("training", "models train to the reference's loss curves (a later issue)",
         assessed=False),
)


def assess_plugin(tier: Tier, results: Sequence[Any], meta: dict[str, Any]) -> dict[str, Any]:
    """{"status": certified | not certified | not assessed, "reasons": [...]} for one plugin's
    results (PluginResult records) of a run with metadata `meta`."""
    if not tier.assessed:
        return {"status": NOT_ASSESSED, "reasons": ["no checks yet"]}
    ran = {r.result.case.suite for r in results}
    missing = [s for s in tier.suites if s not in ran]
    if missing:
        return {"status": NOT_ASSESSED, "reasons": [f"suite {s} did not run" for s in missing]}
    narrowed = [f"{opt} narrowed the run" for opt, key in (("-k", "patterns"),
                                                           ("--dtype", "dtypes"),
                                                           *tier.narrowing)
                if meta.get(key)]
    if narrowed:
        return {"status": NOT_ASSESSED, "reasons": narrowed}
    reasons = []
    for suite, allowed in tier.suites.items():
        bad: dict[str, int] = {}
        for r in results:
            if r.result.case.suite == suite and r.result.status not in allowed:
                bad[str(r.result.status)] = bad.get(str(r.result.status), 0) + 1
        if bad:
            reasons.append(f"{suite}: " + ", ".join(f"{n} {s}" for s, n in sorted(bad.items())))
    for cond in tier.conditions:
        reasons += cond(results, meta)
    return {"status": NOT_CERTIFIED if reasons else CERTIFIED, "reasons": reasons}


def assess(results: Sequence[Any], meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{plugin: {tier: {"status", "reasons"}}} for every plugin of the run, tiers in order."""
    by_plugin: dict[str, list[Any]] = {}
    for r in results:
        by_plugin.setdefault(r.plugin, []).append(r)
    return {p: {t.name: assess_plugin(t, rs, meta) for t in TIERS}
            for p, rs in by_plugin.items()}


def format_tiers(tiers: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The tiers block of the terminal summary: one line per plugin and tier."""
    lines = ["certification tiers:"]
    for plugin, got in tiers.items():
        for name, t in got.items():
            why = f" ({'; '.join(t['reasons'][:3])})" if t["reasons"] else ""
            lines.append(f"  {plugin}  {name}: {t['status'].upper()}{why}")
    return "\n".join(lines)
