"""The size limit of a student's code, one definition for every place that checks it: the answer
form and the API (grader), the web process's reading of a submission (grading.answer_parsing) and
the harness in the sandbox (chainrule.code.harness). Numbers only, no imports: the web and the
sandbox job both load it."""

MAX_CODE_CHARS = 20_000  # characters of one part's source
