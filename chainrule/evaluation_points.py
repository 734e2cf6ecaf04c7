"""Evaluation points for symbolic and code answers: the variant's own
parameters first, then deterministic random ones around them.

The sign rule. A point must teach the same case as the seed, so a parameter
with no range in the variant table is perturbed without ever changing sign:
a value v > 0 is drawn from [max(v - SPREAD, ZERO_MARGIN), v + SPREAD], a value
v < 0 from the mirror image, and a zero stays zero (zeros are structural: a
one-hot seed, a masked entry). Python ints and bools are never perturbed: they
are counts, indices, exponents or switches. A range in the variant table is
the author's deliberate choice and is drawn as written, even across zero (to
check a ReLU derivative on both sides), except that a value within ZERO_MARGIN
of zero is pushed out of that band: kinks (ReLU, abs) sit at zero, and there
autograd's one-sided choice is no answer a student can be held to. Kinks
deeper in the graph are caught with `kinks_clear` on each point's analysis.

Both sides of every kink. Keeping signs would leave a formula asked about a
kink (relu′ at x = -1.5) checked on one side only, where `0` passes. So
`mirrored` extra points are drawn with the signs of some parameters flipped,
and `usable_points` keeps one of them only where it puts some kink's input on
a side no other kept point reaches (and the reference stays finite there);
otherwise they are dropped and the points teach the seed's case as before.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
from collections.abc import Callable, Collection, Mapping
from typing import Any

from chainrule.model import Analysis

SPREAD = 1.5
ZERO_MARGIN = 0.05
DECIMALS = 3  # readable points in messages ("at x0 = 1.234")
MAX_COUNT = 50
TRIES_PER_POINT = 20
KINK_OPS = frozenset({"relu", "abs", "leaky_relu", "hardtanh", "relu6"})
KINK_MARGIN = 1e-3

Point = dict[str, Any]


def evaluation_points(
    *,
    params: Mapping[str, Any],
    ranges: Mapping[str, Any],
    count: int,
    seed: str,
    accept: Callable[[Point], bool] | None = None,
    vary: Collection[str] | None = None,
    mirrored: int = 0,
) -> list[Point]:
    """`params` first, then up to `count` distinct random points, the same for
    the same `seed` string. Only the parameters in `vary` change (default: all):
    a formula in x and y, or a function grad_z(x, y), says nothing about the
    other parameters, so they keep their values (a seed vector of ones stays
    ones). `accept` may veto a drawn point (for example one whose reference
    analysis sits on a kink); the seed point is never vetoed."""
    if not 0 <= count <= MAX_COUNT:
        raise ValueError(f"count must be between 0 and {MAX_COUNT}, got {count}")
    rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    points: list[Point] = [copy.deepcopy(dict(params))]
    for _ in range(count * TRIES_PER_POINT):
        if len(points) > count:
            break
        point = {name: _drawn(value, ranges.get(name), rng) if vary is None or name in vary else copy.deepcopy(value)
                 for name, value in params.items()}
        if point not in points and (accept is None or accept(point)):
            points.append(point)
    return points + _mirrored_points(points, mirrored, rng, vary)


def _mirrored_points(points: list[Point], count: int, rng: random.Random, vary: Collection[str] | None) -> list[Point]:
    found: list[Point] = []
    for _ in range(count * TRIES_PER_POINT):
        if len(found) >= count or len(points) < 2:
            break
        base = rng.choice(points[1:])
        point = {name: _flipped(value, rng) if vary is None or name in vary else copy.deepcopy(value)
                 for name, value in base.items()}
        if point not in points and point not in found:
            found.append(point)
    return found


def _flipped(value: Any, rng: random.Random) -> Any:
    if isinstance(value, list):
        return [_flipped(item, rng) for item in value]
    if isinstance(value, float) and value != 0 and math.isfinite(value) and rng.random() < 0.5:
        return -value
    return copy.deepcopy(value)


def _drawn(value: Any, rule: Any, rng: random.Random) -> Any:
    if isinstance(rule, Mapping) and isinstance(rule.get("choices"), list) and rule["choices"]:
        return copy.deepcopy(rng.choice(rule["choices"]))
    if isinstance(rule, Mapping) and _is_number(rule.get("min")) and _is_number(rule.get("max")):
        return _within(value, float(rule["min"]), float(rule["max"]), rng)
    return _perturbed(value, rng)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _within(value: Any, low: float, high: float, rng: random.Random) -> Any:
    if isinstance(value, list):
        return [_within(item, low, high, rng) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and low.is_integer() and high.is_integer():
        return rng.randint(int(low), int(high))
    drawn = round(rng.uniform(low, high), DECIMALS)
    if abs(drawn) >= ZERO_MARGIN:
        return drawn
    side = ZERO_MARGIN if drawn >= 0 else -ZERO_MARGIN
    return side if low <= side <= high else (-side if low <= -side <= high else drawn)


def _perturbed(value: Any, rng: random.Random) -> Any:
    if isinstance(value, list):
        return [_perturbed(item, rng) for item in value]
    if not isinstance(value, float) or value == 0 or not math.isfinite(value):
        return value  # ints, bools, zeros and anything else stay as authored
    size = abs(value)
    magnitude = round(rng.uniform(max(size - SPREAD, ZERO_MARGIN), size + SPREAD), DECIMALS)
    return math.copysign(max(magnitude, ZERO_MARGIN), value)


def kinks_clear(analysis: Analysis, margin: float = KINK_MARGIN) -> bool:
    """False when some ReLU-like node's input is within `margin` of zero at
    this point: the gradient there depends on a convention, not on the rule."""
    values = {node.id: node.value for node in analysis.graph.nodes}
    kinks = {node.id for node in analysis.graph.nodes if node.kind == "op" and node.name in KINK_OPS}
    for edge in analysis.graph.edges:
        if edge.target in kinks and any(abs(number) < margin for number in _numbers(values.get(edge.source))):
            return False
    return True


def _numbers(value: Any) -> list[float]:
    if isinstance(value, list):
        return [number for item in value for number in _numbers(item)]
    return [float(value)] if _is_number(value) else []


def usable_points(
    points: list[Point], analyses: list[Analysis | None], *, count: int
) -> tuple[list[Point], list[Analysis]]:
    """The seed point and the first `count` drawn points whose reference ran
    and sits on no kink, with their analyses. Draw a few more points than
    needed, analyse them all, then keep these. The seed must have run: its
    failure is the reference program's failure."""
    if not points or len(points) != len(analyses):
        raise ValueError("one analysis (or None) per point, seed first")
    seed = analyses[0]
    if seed is None:
        raise ValueError("the reference program fails at the seed point")
    candidates = [(point, analysis) for point, analysis in zip(points[1:], analyses[1:], strict=True)
                  if analysis is not None and kinks_clear(analysis)]
    same = [(p, a) for p, a in candidates if _same_signs(p, points[0])]
    kept = same[:count]
    covered = kink_sides(seed).union(*(kink_sides(a) for _, a in kept))
    for point, analysis in candidates:
        sides = kink_sides(analysis)
        if not _same_signs(point, points[0]) and not sides <= covered and _finite_parts(analysis):
            kept = [*kept[: count - 1], (point, analysis)] if len(kept) >= count else [*kept, (point, analysis)]
            covered |= sides
    for point, analysis in candidates:  # an author's range across zero: its draws are no mirror images
        if len(kept) < count and all(point is not other for other, _ in kept) and _finite_parts(analysis):
            kept.append((point, analysis))
    kept.sort(key=lambda item: points.index(item[0]))
    return [points[0], *(point for point, _ in kept)], [seed, *(analysis for _, analysis in kept)]


def kink_sides(analysis: Analysis) -> set[tuple[str, int, bool]]:
    """(kink node, entry, input positive) for every entry of every ReLU-like node's input."""
    values = {node.id: node.value for node in analysis.graph.nodes}
    kinks = {node.id for node in analysis.graph.nodes if node.kind == "op" and node.name in KINK_OPS}
    return {(edge.target, index, number > 0) for edge in analysis.graph.edges if edge.target in kinks
            for index, number in enumerate(_numbers(values.get(edge.source)))}


def _same_signs(point: Point, seed: Point) -> bool:
    return all(_signs(point.get(name)) == _signs(value) for name, value in seed.items())


def _signs(value: Any) -> list[bool]:
    return [number > 0 for number in _numbers(value)]


def _finite_parts(analysis: Analysis) -> bool:
    return all(math.isfinite(number) for part in analysis.parts.values() for number in _numbers(part.value))
