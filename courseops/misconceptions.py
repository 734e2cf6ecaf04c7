"""Misconception tallies: pure functions over graded attempts (no Django).

Counts are per attempt that answered the part; a "wrong" attempt is one whose diagnosis is not
correct. Shares are of the wrong attempts ("41 % of wrong answers missed x → mul → add → z").
Paths are tallied only when a diagnosis named them: an `unknown` diagnosis lists every path of the
gradient that is off, which says nothing about which one the student got wrong.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from chainrule.diagnosis.message_context import KIND_SUMMARY
from courseops.query_numbers import query_int

UNANSWERED = "unanswered"
UNNAMED = ("unknown",)  # kinds whose paths are not a finding
STUCK_AFTER = 3  # attempts on a part without a right answer before a student counts as stuck
# Staff read a diagnosis by its plain name, never its code (the code stays in CSVs, the API and filters)
KIND_WORDS = {**KIND_SUMMARY, "unknown": "no known mistake matches", "wrong_choice": "a wrong choice",
              "correct": "right", UNANSWERED: "no answer"}


def kind_words(kind: str) -> str:
    """"missing_path" → "leaving out a path"; a kind without a plain name loses its underscores."""
    return KIND_WORDS.get(kind, kind.replace("_", " "))


@dataclass(frozen=True)
class Attempt:
    """One graded submission as analytics sees it: who, when, and its result document's parts."""

    submission_id: int
    student: str
    attempt: int
    day: date
    parts: Sequence[dict[str, Any]]


@dataclass
class PartStats:
    attempts: int = 0
    wrong: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    paths: Counter[tuple[str, ...]] = field(default_factory=Counter)
    edges: Counter[tuple[str, ...]] = field(default_factory=Counter)  # [source, target] of a wrong local derivative
    by_day: dict[date, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    per_student: dict[str, list[tuple[int, int, bool, str]]] = field(default_factory=lambda: defaultdict(list))


def _answered(parts: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    return (p for p in parts if p.get("diagnosis", {}).get("kind") != UNANSWERED and p.get("answer") != "")


def part_stats(attempts: Iterable[Attempt]) -> dict[str, PartStats]:
    """Tallies every answered part of every attempt, in one pass."""
    stats: dict[str, PartStats] = defaultdict(PartStats)
    for attempt in attempts:
        for part in _answered(attempt.parts):
            one = stats[part["part"]]
            correct = bool(part.get("correct"))
            kind = part.get("diagnosis", {}).get("kind", "unknown")
            one.attempts += 1
            one.by_day[attempt.day][0] += 1
            one.per_student[attempt.student].append((attempt.attempt, attempt.submission_id, correct, kind))
            if correct:
                continue
            one.wrong += 1
            one.by_day[attempt.day][1] += 1
            one.kinds[kind] += 1
            named = part.get("diagnosis", {}).get("paths", []) if kind not in UNNAMED else []
            for path in {tuple(p) for p in named}:
                one.paths[path] += 1
            for edge in _edges(part.get("diagnosis", {})) if kind not in UNNAMED else set():
                one.edges[edge] += 1
    return dict(stats)


def _edges(diagnosis: dict[str, Any]) -> set[tuple[str, ...]]:
    """The edges a diagnosis names: its own, and those of each of two mistakes."""
    found = [diagnosis.get("edge"), *(m.get("edge") for m in diagnosis.get("mistakes") or [] if isinstance(m, dict))]
    return {tuple(edge) for edge in found if isinstance(edge, list) and len(edge) == 2}


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def _first_and_final(per_student: dict[str, list[tuple[int, int, bool, str]]]) -> dict[str, Any]:
    first: Counter[str] = Counter()
    final: Counter[str] = Counter()
    for tries in per_student.values():
        ordered = sorted(tries)
        first["correct" if ordered[0][2] else ordered[0][3]] += 1
        final["correct" if ordered[-1][2] else ordered[-1][3]] += 1
    students = len(per_student)
    return {
        "students": students,
        "first": {"correct": first.pop("correct", 0), "kinds": dict(sorted(first.items()))},
        "final": {"correct": final.pop("correct", 0), "kinds": dict(sorted(final.items()))},
    }


def stuck_after_from(query: Any) -> int:
    """`?stuck_after=N` of a page or API request, bounded to 1–100 (default STUCK_AFTER)."""
    return query_int(query, "stuck_after", default=STUCK_AFTER, low=1, high=100)


def stuck_students(stats: PartStats, *, after: int = STUCK_AFTER) -> list[dict[str, Any]]:
    """Students with at least `after` attempts on the part and no right answer yet."""
    stuck = []
    for student, tries in sorted(stats.per_student.items()):
        if len(tries) >= after and not any(correct for _, _, correct, _ in tries):
            last = max(tries)
            stuck.append({"student": student, "attempts": len(tries), "last_kind": last[3],
                          "last_submission": last[1], "submissions": sorted(t[1] for t in tries)})
    return stuck


def part_summary(stats: PartStats, *, stuck_after: int = STUCK_AFTER) -> dict[str, Any]:
    """The API shape of one part, plus first/final, trend and stuck students."""
    paths = sorted(stats.paths.items(), key=lambda item: (-item[1], item[0]))
    edges = sorted(stats.edges.items(), key=lambda item: (-item[1], item[0]))
    return {
        "attempts": stats.attempts,
        "wrong": stats.wrong,
        "kinds": dict(sorted(stats.kinds.items(), key=lambda item: (-item[1], item[0]))),
        "kind_shares": {kind: _share(n, stats.wrong) for kind, n in stats.kinds.items()},
        "paths": [{"path": list(path), "count": n, "share": _share(n, stats.wrong)} for path, n in paths],
        "edges": [{"edge": list(edge), "count": n, "share": _share(n, stats.wrong)} for edge, n in edges],
        **_first_and_final(stats.per_student),
        "by_day": [{"day": day.isoformat(), "attempts": a, "wrong": w} for day, (a, w) in sorted(stats.by_day.items())],
        "stuck_after": stuck_after,
        "stuck": stuck_students(stats, after=stuck_after),
    }


def assignment_analytics(attempts: Iterable[Attempt], *, part_order: Sequence[str],
                         stuck_after: int = STUCK_AFTER) -> dict[str, Any]:
    """{"parts": {key: summary}} for every part in `part_order`, answered or not."""
    stats = part_stats(attempts)
    return {"parts": {key: part_summary(stats.get(key, PartStats()), stuck_after=stuck_after)
                      for key in part_order}}


def analytics_csv_rows(analytics: dict[str, Any]) -> Iterable[list[str]]:
    """One row per (part, kind or path): part, what, name, count, share of wrong attempts."""
    yield ["part", "what", "name", "count", "share_of_wrong", "attempts", "wrong"]
    for key, part in analytics["parts"].items():
        totals = [str(part["attempts"]), str(part["wrong"])]
        for kind, count in part["kinds"].items():
            yield [key, "kind", kind, str(count), f"{part['kind_shares'][kind]:.4f}", *totals]
        for path in part["paths"]:
            yield [key, "path", " → ".join(path["path"]), str(path["count"]), f"{path['share']:.4f}", *totals]
        for edge in part["edges"]:
            yield [key, "edge", " → ".join(edge["edge"]), str(edge["count"]), f"{edge['share']:.4f}", *totals]
