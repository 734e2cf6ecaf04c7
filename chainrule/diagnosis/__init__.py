"""Names the student's mistake from numbers alone: a wrong answer is compared with
the analysis's precomputed hypotheses (one point, or across evaluation points), and
the message says which path or edge and why. No torch: runs in web and workers."""
