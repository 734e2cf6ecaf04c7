"""Reference analyses at every evaluation point, cached across tests (each
costs a few real torch runs)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from chainrule import Analysis, analyze_program
from chainrule.evaluation_points import evaluation_points
from chainrule.tests.seeds import SEEDS

Point = dict[str, Any]


@cache
def _analyses(program: str, points_json: str, parts: tuple[str, ...]) -> tuple[Analysis, ...]:
    return tuple(analyze_program(program=program, params=point, parts=list(parts)) for point in json.loads(points_json))


def analyses_at(program: str, points: list[Point], parts: list[str]) -> list[Analysis]:
    return list(_analyses(program, json.dumps(points, sort_keys=True), tuple(parts)))


def seed_points(slug: str, *, ranges: dict[str, Any] | None = None, count: int = 5,
                vary: list[str] | None = None) -> list[Point]:
    return evaluation_points(params=SEEDS[slug].params, ranges=ranges or {}, count=count, seed=f"student-7/{slug}",
                             vary=vary)


def seed_analyses(slug: str, points: list[Point]) -> list[Analysis]:
    return analyses_at(SEEDS[slug].program, points, SEEDS[slug].parts)
