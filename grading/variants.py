"""Parameter values per student and the cached reference analysis of each variant."""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import tokenize
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from assignments.models import Assignment, Variant
from assignments.part_config import CodeConfig, SymbolicConfig, reference_keys
from chainrule import Analysis
from chainrule.evaluation_points import evaluation_points, usable_points
from grading.analysis_cache import Lru
from grading.reference import ReferenceRunError, get_runner
from infra import clock

ANALYSIS_VERSION = 14  # bump when the engine's analyses or the choice of points change: caches go stale
POINT_COUNT = 5  # random points besides the seed point, for symbolic and code parts
DRAWN_POINTS = 9  # drawn and analysed; points on a kink are dropped
MIRRORED_POINTS = 3  # drawn with signs flipped, kept only to reach the other side of a kink

# Per process: parsed analyses by Variant.cache_key, and variant ids by (assignment, reference hash).
_ANALYSES: Lru[tuple[Any, ...], Analysis] = Lru(settings.GRADER_ANALYSIS_CACHE_SIZE)
_POINTS: Lru[tuple[Any, ...], tuple[list[dict[str, Any]], list[Analysis]]] = Lru(settings.GRADER_ANALYSIS_CACHE_SIZE)
_VARIANT_IDS: Lru[tuple[Any, ...], int] = Lru(10 * settings.GRADER_ANALYSIS_CACHE_SIZE)


def reference_hash(*, assignment: Assignment, params: dict[str, Any]) -> str:
    """Keys a variant to everything its cached analyses depend on: the program, the values and
    the parts (their configs decide what is read and which parameters vary between points)."""
    parts = sorted((p.key, p.kind, p.config) for p in assignment.parts.all())
    blob = json.dumps([ANALYSIS_VERSION, assignment.reference_program, params, parts], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def assignment_keys(assignment: Assignment) -> list[str]:
    """What the reference analysis reads: numeric keys, symbolic `of`, code returns/reads."""
    return reference_keys([(p.key, p.kind_config) for p in assignment.parts.all()])


def params_for_student(*, assignment: Assignment, student_id: int | None) -> dict[str, Any]:
    """Seed values, or values drawn with a stable seed per (student, assignment)."""
    params = dict(assignment.params)
    if student_id is None or not assignment.variant_ranges:
        return params
    rng = random.Random(f"{assignment.slug}:{student_id}")
    for name, rule in sorted(assignment.variant_ranges.items()):
        params[name] = _draw(rng, rule, params[name])
    return params


def _draw(rng: random.Random, rule: dict[str, Any], default: Any) -> Any:
    """A value shaped and typed like the default: a range applies to each entry of a list."""
    if "choices" in rule:
        return rng.choice(rule["choices"])
    if isinstance(default, list):
        return [_draw(rng, rule, item) for item in default]
    low, high, step = rule["min"], rule["max"], rule.get("step", 1)
    steps = min(int((high - low) / step), 1_000_000)
    value = low + step * rng.randint(0, steps)
    return int(value) if isinstance(default, int) and not isinstance(default, bool) else float(value)


def variant_get(*, assignment: Assignment, params: dict[str, Any]) -> Variant:
    """The variant for these parameters with its analysis, computing it once if needed.

    Raises ReferenceRunError when the reference program fails (stored on the variant too).
    """
    digest = reference_hash(assignment=assignment, params=params)
    return _ready(_variant_row(assignment=assignment, params=params, digest=digest), assignment)


def variant_ready(*, variant: Variant, assignment: Assignment | None = None) -> Variant:
    """This variant's parameters under the CURRENT reference, with its seed analysis computed.

    A submission made before the instructor changed the reference is graded with the new one,
    and an old row never caches the analysis of a program other than the one it is keyed by.
    `assignment` saves a query when the caller holds it (with its parts prefetched).
    Raises ReferenceRunError when the reference fails.
    """
    assignment = assignment or variant.assignment
    digest = reference_hash(assignment=assignment, params=variant.params)
    if digest != variant.reference_hash:
        variant = _variant_row(assignment=assignment, params=variant.params, digest=digest)
    return _ready(variant, assignment)


def _ready(variant: Variant, assignment: Assignment) -> Variant:
    variant.assignment = assignment  # the caller's row, parts prefetched: computing reads them
    key = variant.cache_key
    if key is not None and _ANALYSES.get(key) is not None:
        return variant  # computed and parsed in this process before: the analysis column stays unread
    if variant.analysis is None:
        _variant_compute(variant=variant)
    return variant


def variant_analysis(*, variant: Variant) -> Analysis:
    """The parsed seed analysis of a ready variant (variant_get / variant_ready), parsed once per process."""
    key = variant.cache_key
    analysis = _ANALYSES.get(key) if key is not None else None
    if analysis is None:
        analysis = Analysis.from_json(variant.analysis_data())
        if key is not None:
            _ANALYSES.put(key, analysis)
    return analysis


def variant_id_for(*, assignment: Assignment, params: dict[str, Any]) -> int:
    """The id of the variant row for these parameters (created if needed), without computing its analysis.

    Remembered per process: a row, once committed, keeps its id for its (assignment, hash). Not
    remembered inside a transaction, which may still roll the row back (previews do); keyed by the
    assignment's updated_at too, as an assignment deleted and made again may get the same id.
    """
    digest = reference_hash(assignment=assignment, params=params)
    key = (assignment.pk, assignment.updated_at, digest)
    known = _VARIANT_IDS.get(key)
    if known is not None:
        return known
    variant = _variant_row(assignment=assignment, params=params, digest=digest, light=True)
    if not transaction.get_connection().in_atomic_block:
        _VARIANT_IDS.put(key, variant.pk)
    return variant.pk


def _variant_row(*, assignment: Assignment, params: dict[str, Any], digest: str, light: bool = False) -> Variant:
    """`light` leaves the (large) analyses unread: a web request only needs the row's id."""
    rows = Variant.objects.defer("analysis", "point_analyses") if light else Variant.objects.all()
    try:
        variant, _ = rows.get_or_create(assignment=assignment, reference_hash=digest, defaults={"params": params})
    except IntegrityError:  # a concurrent worker created it first
        variant = rows.get(assignment=assignment, reference_hash=digest)
    return variant


def _variant_compute(*, variant: Variant) -> None:
    assignment = variant.assignment
    keys = assignment_keys(assignment)
    try:
        analysis = get_runner().analyze(program=assignment.reference_program, params=variant.params, parts=keys)
    except ReferenceRunError as exc:
        Variant.objects.filter(id=variant.id).update(error=str(exc))
        raise
    variant.analysis, variant.error, variant.computed_at = analysis, "", clock.now()
    Variant.objects.filter(id=variant.id).update(
        analysis=analysis, error="", computed_at=variant.computed_at
    )


def variant_points(*, variant: Variant) -> tuple[list[dict[str, Any]], list[Analysis]]:
    """The seed point and several random points with their analyses, computed once per variant
    and parsed once per process."""
    key = variant.cache_key
    known = _POINTS.get(key) if key is not None else None
    if known is not None:
        return known
    if variant.point_analyses is None:
        _points_compute(variant=variant)
    assert variant.point_analyses is not None
    data = variant.point_analyses
    points = (data["points"], [Analysis.from_json(item) for item in data["analyses"]])
    if key is not None:
        _POINTS.put(key, points)
    return points


def _points_compute(*, variant: Variant) -> None:
    assignment = variant.assignment
    drawn = evaluation_points(params=variant.params, ranges=assignment.variant_ranges, count=DRAWN_POINTS,
                              mirrored=MIRRORED_POINTS,
                              seed=f"{assignment.slug}/{variant.reference_hash}", vary=_varied(assignment))
    analyses = get_runner().analyze_points(program=assignment.reference_program, points=drawn,
                                           parts=assignment_keys(assignment))
    if analyses[0] is None:
        raise ReferenceRunError("the reference program fails at the seed point")
    parsed = [Analysis.from_json(item) if item is not None else None for item in analyses]
    points, kept = usable_points(drawn, parsed, count=POINT_COUNT)
    variant.point_analyses = {"points": points, "analyses": [item.to_json() for item in kept]}
    Variant.objects.filter(id=variant.id).update(point_analyses=variant.point_analyses)


def _varied(assignment: Assignment) -> list[str] | None:
    """Only the parameters that formulas, functions and programs take vary between points; the rest
    (e.g. a seed vector the statement fixes to ones) keep their values."""
    names: list[str] = []
    for part in assignment.parts.all():
        config = part.kind_config
        if isinstance(config, SymbolicConfig):
            names.extend(config.variables.values())
        elif isinstance(config, CodeConfig):
            names.extend(config.args)
            names.extend(_program_params(config, assignment.params))
    return sorted(set(names)) or None


def _program_params(config: CodeConfig, params: dict[str, Any]) -> list[str]:
    """A program or fix part's `vary`, else the parameters its starter code uses."""
    if config.mode not in ("program", "fix"):
        return []
    if config.vary is not None:
        return list(config.vary)
    return [name for name in params if name in _names_in(config.starter)]


def _names_in(source: str) -> set[str]:
    """Identifiers used by the code, not words in its comments or strings."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return set(re.findall(r"[A-Za-z_]\w*", "\n".join(line.split("#")[0] for line in source.splitlines())))
    return {token.string for token in tokens if token.type == tokenize.NAME}
