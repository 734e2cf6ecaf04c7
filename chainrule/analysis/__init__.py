"""Runs the instructor's reference program under torch and turns its graph into
plain numbers (chainrule.model.Analysis): the graph, the chain-rule paths, every
precomputed mistake. Needs torch: it runs in the sandbox, never in the web
process or a grading worker."""

from chainrule.analysis.program import analyze_program

__all__ = ["analyze_program"]
