"""Errors of the analysis, importable without torch."""

from __future__ import annotations


class ProgramError(Exception):
    """The reference program itself failed; the message names its line."""


class AnalysisError(Exception):
    """The program ran but cannot be analysed (bad part, non-finite value…)."""
