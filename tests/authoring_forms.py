"""POST data for the authoring form, as a browser would send it (shared by the authoring tests)."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

WALKTHROUGH_REFERENCE = """x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
a = x * y
b = x**2
z = a + b
z.backward()
"""


# No product: no typical mistake's answer is also some node's forward value, so vetting passes.
GOOD_REFERENCE = """x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
z = 3 * x**2 + 2 * y
z.backward()
"""
GOOD_PARAMS = "x0 = 1.5\ny0 = -0.5"
BROKEN_REFERENCE = "x = torch.tensor(x0, requires_grad=True)\nz = x * q\nz.backward()\n"


def form_post(*, slug: str, reference: str = GOOD_REFERENCE, params: str = GOOD_PARAMS,
              parts: list[dict[str, Any]] | None = None, **policy: Any) -> dict[str, Any]:
    parts = parts if parts is not None else [{"key": "x.grad", "kind": "numeric"},
                                             {"key": "y.grad", "kind": "numeric"}]
    data: dict[str, Any] = {
        "slug": slug, "title": f"Title of {slug}", "statement": "Take $z = x y + x^2$. Find the gradients.",
        "reference": reference, "params": params, "variants": "", "time_zone": "UTC", "counts": "best",
        "reveal": "never", "hints_after": "0", "late_penalty": "", "max_attempts": "", "rate_limit": "",
        "opens_at": "", "due_at": "", "closes_at": "",
        "parts-TOTAL_FORMS": str(len(parts)), "parts-INITIAL_FORMS": "0", "parts-MIN_NUM_FORMS": "0",
        "parts-MAX_NUM_FORMS": "50",
    }
    data.update({k: str(v) for k, v in policy.items()})
    for index, part in enumerate(parts):
        defaults = {"points": "1", "rel_tol": "0.0001", "abs_tol": "0.000001", "prompt": "", "hint": "",
                    "expected": "", "config": ""}
        for name, value in {**defaults, **part}.items():
            data[f"parts-{index}-{name}"] = value
    return data


def job_id_in(html: str) -> int:
    found = re.search(r'id="job-(\d+)"', html)
    assert found, html[:2000]
    return int(found.group(1))


def preview_page(client: Client, slug: str, post: dict[str, Any]) -> str:
    """Post the preview, run its job as the maintenance worker does (in this process, inside the
    test's transaction), and return the fragment the page's next poll gets."""
    response = client.post(f"/staff/assignments/{slug}/preview/", post)
    assert response.status_code == 200, response.content.decode()[:2000]
    return job_fragment(client, job_id_in(response.content.decode()))


def publish_page(client: Client, slug: str, post: dict[str, Any] | None = None) -> str:
    """Press "Vet and publish" (with `justify:<code>` fields), run the job as the maintenance worker
    does, and return what the job page then shows: "Published version N." or the reasons."""
    response = client.post(f"/staff/assignments/{slug}/publish/", post or {})
    assert response.status_code == 302 and response["Location"].startswith("/staff/jobs/"), response
    return job_fragment(client, int(response["Location"].rstrip("/").rsplit("/", 1)[1]))


def job_fragment(client: Client, job_id: int) -> str:
    from authoring.jobs import job_run

    job_run(job_id=job_id)
    return client.get(f"/staff/jobs/{job_id}/", headers={"HX-Request": "true"}).content.decode()
