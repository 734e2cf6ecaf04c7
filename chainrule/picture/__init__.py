"""The graph picture (Graphviz DOT/SVG) drawn from an analysis's plain numbers:
forward values, local derivatives, the backward flow and the student's wrong edge.
No torch: runs in web and workers."""
