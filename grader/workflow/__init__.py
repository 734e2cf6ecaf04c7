"""The life of a submission. Read this first: every stage is a module of this package.

    web process                       Redis (broker)            worker (numeric or code lane)
    ───────────                       ──────────────            ─────────────────────────────
    1 submit ── row queued ──────────▶ drain / task ──────────▶ 2 claim ─▶ 3 grade ─▶ 4 results
                                                                  ▲                      │
    5 sweep (maintenance lane, every few seconds): lost or stuck ─┘        wake waiters ◀┘, LMS hook

1. **submit** (`submit.submission_create`, in the request): replay check for an Idempotency-Key; the
   window (grader/policy.py: open, due, extension), before anything in the answers is read; the answers
   read with bounded cost and no reference run (grading/answer_parsing.py: an unreadable answer is
   refused here and uses no attempt); the student's variant id (grading/variants.py). Then, under a
   lock on the student's membership row, attempts and rate are counted and the row is stored `queued`
   in its lane (grader/fairness.py: numeric or code). After commit, `queueing` hands it on: a numeric
   row makes sure one drain message waits (one Redis round trip); a code row waits until the student
   has a free sandbox slot, then gets a task of its own.
2. **claim** (`claim`): queued → running under a claim token, counting the delivery, in one
   conditional UPDATE; a numeric drain claims up to 8 due rows at once. Every later write goes through
   `claim.owned`, so a run the sweeper replaced cannot overwrite its successor.
3. **grade** (`grade.numeric_drain`, `grade.submission_grade`): the variant's reference analysis, run
   once per variant in the sandbox and cached (grading/variants.py), against the answers
   (grading/answer_grading.py: each part kind; code parts run in the sandbox, grading/code_parts.py);
   the engine (chainrule) diagnoses each wrong part. The sandbox away: the row is requeued (no loss to
   the student); any other failure: an infrastructure error that costs no attempt.
4. **results** (`results.results_store`): the counted score (chainrule.result.counted_score: the
   parts' scores times the late factor), the result document and the picture's highlight, stored in
   one transaction with the graded mark; after commit the waiting requests are woken
   (grader/finished.py) and the apps above hear of it (grader/hooks.py: the LMS gradebook).
5. **sweep** (`sweep.submissions_sweep`): rows whose message was lost or whose worker died are
   enqueued again; after 5 deliveries a row is given up as an infrastructure error.

Reading a result back — the page, the API, the picture — is grader/selectors.py and grader/pictures.py.
docs/architecture.md tells the same journeys with every module they visit.
"""

from grader.workflow.grade import numeric_drain, submission_grade
from grader.workflow.regrade import submission_regraded
from grader.workflow.submit import AlreadySubmitted, attempts_used, submission_create
from grader.workflow.sweep import submissions_sweep, sweep_defaults

__all__ = ["AlreadySubmitted", "attempts_used", "numeric_drain", "submission_create", "submission_grade",
           "submission_regraded", "submissions_sweep", "sweep_defaults"]
