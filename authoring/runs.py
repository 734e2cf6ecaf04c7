"""What an authoring job does in the worker (authoring/jobs.py): build a preview of the
form as it was posted, load uploaded catalog files, or vet and publish. Each returns the JSON the
page (or the API) shows."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from assignments.models import AuthoringJob
from authoring.catalog_load import REFUSED, STATE_NAMES, LoadOutcome, catalog_file_load
from authoring.forms import catalog_from_json
from authoring.preview import preview_build
from authoring.publishing import PublishRefused, assignment_publish, staged
from authoring.reasons import Reason
from catalog.errors import CatalogError

log = logging.getLogger(__name__)


def preview_run(job: AuthoringJob) -> dict[str, Any]:
    """{"preview": …} as `_preview.html` shows it, or {"form_errors": [...]}."""
    payload, assignment = job.payload, job.assignment
    if assignment is None:
        return {"error": "The assignment was deleted."}
    try:
        preview = staged(assignment=assignment, data=catalog_from_json(payload["data"]),
                         work=lambda row: preview_build(assignment=row, answers=payload.get("answers", {}),
                                                        code=payload.get("code", {})))
    except CatalogError as exc:
        return {"form_errors": [f"{exc.field}: {exc.problem}"]}
    return {"preview": dataclasses.asdict(preview)}


def import_run(job: AuthoringJob) -> dict[str, Any]:
    """{"outcomes": [...]}: each file published, kept as a draft with its reasons, or refused."""
    outcomes = [LoadOutcome(file=line.split(":", 1)[0], slug="", state=REFUSED, lines=[line])
                for line in job.payload.get("refused", [])]
    outcomes += [_file_loaded(job, name, text) for name, text in job.payload["files"]]
    return {"outcomes": [{**dataclasses.asdict(o), "summary": o.summary(), "detail": o.detail(),
                          "state_name": STATE_NAMES[o.state]} for o in outcomes]}


def _file_loaded(job: AuthoringJob, name: str, text: str) -> LoadOutcome:
    """One file's outcome; a bug it trips is that file's refusal, not the end of the job (the files
    before it are already published, and the report must say so)."""
    try:
        return catalog_file_load(name=name, raw=text.encode("utf-8"), course=job.course, user=job.requested_by,
                                 other_courses=False)
    except Exception:
        log.exception("import job %s: loading %s failed", job.pk, name)
        return LoadOutcome(file=name, slug="", state=REFUSED,
                           lines=[f"{name}: could not be loaded: an error on our side (logged)"])


def publish_run(job: AuthoringJob) -> dict[str, Any]:
    """{"version": n, "warnings": ["field: problem", …]}, {"refused": [{code, field, problem}, …]} (every open
    vetting reason) or {"errors": […]}."""
    if job.assignment is None:
        return {"error": "The assignment was deleted."}
    warned: list[Reason] = []
    try:
        version = assignment_publish(assignment=job.assignment, user=job.requested_by, warned=warned,
                                     justifications=job.payload.get("justifications", {}))
    except PublishRefused as exc:
        return {"refused": [dataclasses.asdict(reason) for reason in exc.reasons]}
    except CatalogError as exc:
        return {"errors": [f"{exc.field}: {exc.problem}"]}
    return {"version": version.number, "warnings": [f"{reason.field}: {reason.problem}" for reason in warned]}
