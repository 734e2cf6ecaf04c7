"""Reads and grades what students type: numbers, formulas (parsed by a bounded
parser; SymPy only in the sandbox job `formula_job`) and the untrusted report of a
code part's harness job. No torch: runs in web and workers."""
