"""chainrule — the feedback engine of the autograd grading service.

The pure parts (answers, diagnosis, feedback, result document, picture) load
without torch; `analyze_program` imports torch only when it is called, so a
web process that only diagnoses answers never pays for the import."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chainrule.answers.number_parse import AnswerError, parse_numeric
from chainrule.diagnosis.numeric import Diagnosis, diagnose_numeric
from chainrule.errors import AnalysisError, ProgramError
from chainrule.model import Analysis, Graph, GraphEdge, GraphNode, Highlight, Hypothesis, PathContribution
from chainrule.picture.disclosure import Disclosure
from chainrule.picture.graph import GraphvizMissing, graph_dot, graph_svg
from chainrule.result import GradedPart, build_result
from chainrule.values import Value

__all__ = [
    "Analysis",
    "AnalysisError",
    "AnswerError",
    "Diagnosis",
    "Disclosure",
    "GradedPart",
    "Graph",
    "GraphEdge",
    "GraphNode",
    "GraphvizMissing",
    "Highlight",
    "Hypothesis",
    "PathContribution",
    "ProgramError",
    "Value",
    "analyze_program",
    "build_result",
    "diagnose_numeric",
    "graph_dot",
    "graph_svg",
    "parse_numeric",
]


def analyze_program(
    *, program: str, params: Mapping[str, Any], parts: Sequence[str], max_paths: int = 64
) -> Analysis:
    """See chainrule.analysis.program.analyze_program (imported here lazily: torch)."""
    from chainrule.analysis.program import analyze_program as analyze

    return analyze(program=program, params=params, parts=parts, max_paths=max_paths)
