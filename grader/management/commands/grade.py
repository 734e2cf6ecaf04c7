"""python manage.py grade SLUG PART=ANSWER… [--code-file F] [--json] [--svg FILE]

Grades synchronously with the same engine as the workers; stores no submission and no result. Like a
worker it stores the variant of the assignment's own values when missing, with its reference analysis
(and, for code parts, the analyses at the evaluation points): the reference run is cached.
Exit 0 whether or not the answers are right; 2 on unreadable input or unknown slug/part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assignments.models import Assignment
from grader.feedback_text import document_as_text
from grading.answer_grading import answers_grade, graded_svg
from grading.answer_parsing import AnswerErrors, answers_parse
from grading.reference import ReferenceRunError
from grading.variants import variant_analysis, variant_get

MAX_ARG = 100_000


class Command(BaseCommand):
    help = "Grade answers to an assignment and print the feedback (or the result document with --json)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("answers", nargs="*", metavar="PART=ANSWER")
        parser.add_argument("--json", action="store_true", help="print the result document as JSON")
        parser.add_argument("--svg", type=Path, help="write the graph picture (wrong path highlighted) here")
        parser.add_argument("--code-file", action="append", default=[], metavar="[PART=]F",
                            help="source for a code part (PART=F or F for the only code part)")

    def handle(self, *args: Any, **options: Any) -> None:
        assignment = _assignment(options["slug"])
        answers = _answers(options["answers"], allow_empty=bool(options["code_file"]))
        code = _code(assignment, options["code_file"])
        try:
            answers_parse(assignment=assignment, answers=answers, code=code)
            variant = variant_get(assignment=assignment, params=assignment.params)
            graded = answers_grade(assignment=assignment, variant=variant, answers=answers, code=code,
                                   expected_shown=True)
        except AnswerErrors as exc:
            raise CommandError("\n".join(f"{k}: {m}" for k, m in exc.errors.items()), returncode=2) from None
        except ReferenceRunError as exc:
            raise CommandError(f"grading {assignment.slug} failed: {exc}", returncode=2) from None
        if options["svg"]:
            try:
                options["svg"].write_text(graded_svg(analysis=variant_analysis(variant=variant), graded=graded))
            except OSError as exc:
                raise CommandError(f"cannot write {options['svg']}: {exc.strerror}", returncode=2) from None
        if options["json"]:
            self.stdout.write(json.dumps(graded.document, indent=2))
        else:
            self.stdout.write(document_as_text(graded.document))


def _assignment(slug: str) -> Assignment:
    try:
        return Assignment.objects.get(slug=slug)
    except Assignment.DoesNotExist:
        known = ", ".join(Assignment.objects.values_list("slug", flat=True)) or "none (run load_assignments)"
        raise CommandError(f"unknown assignment {slug[:80]!r}; known: {known}", returncode=2) from None


def _code(assignment: Assignment, specs: list[Path]) -> dict[str, str]:
    """--code-file PART=FILE, or FILE alone when the assignment has exactly one code part."""
    code_parts = list(assignment.parts.filter(kind="code").values_list("key", flat=True))
    code: dict[str, str] = {}
    for spec in specs:
        key, sep, name = str(spec).rpartition("=")
        if not sep:
            if len(code_parts) != 1:
                raise CommandError(f"say which code part: --code-file PART=FILE (parts: {code_parts})", returncode=2)
            key = code_parts[0]
        try:
            code[key] = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {name}: {exc}", returncode=2) from None
    return code


def _answers(items: list[str], *, allow_empty: bool) -> dict[str, str]:
    answers: dict[str, str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise CommandError(f"expected PART=ANSWER, got {item[:80]!r}", returncode=2)
        if len(item) > MAX_ARG:
            raise CommandError(f"the answer to {key[:64]} is longer than {MAX_ARG} characters", returncode=2)
        answers[key.strip()] = text
    if not answers and not allow_empty:
        raise CommandError("give at least one PART=ANSWER, e.g. x.grad=7", returncode=2)
    return answers
