"""Deep linking: the assignments an instructor picked become signed `ltiResourceLink` items."""

from __future__ import annotations

from typing import Any

from lti_tool.models import LtiRegistration
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.lineitem import LineItem

from assignments.models import Assignment
from lti.tool_config import registration_for_signing

SETTINGS_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


def deep_link_response(*, registration: LtiRegistration, deployment_id: str, settings_claim: dict[str, Any],
                       assignments: list[Assignment], launch_url: str) -> tuple[str, str]:
    """(return URL, signed JWT) for the picked assignments, each with its gradebook column."""
    resources = [_resource(assignment, launch_url) for assignment in assignments]
    deep_link = DeepLink(registration_for_signing(registration), deployment_id, settings_claim)  # type: ignore[arg-type]
    return settings_claim["deep_link_return_url"], deep_link.get_response_jwt(resources)


def _resource(assignment: Assignment, launch_url: str) -> DeepLinkResource:
    maximum = float(sum(part.points for part in assignment.parts.all())) or 1.0
    line_item = LineItem().set_score_maximum(maximum).set_label(assignment.title).set_resource_id(assignment.slug)
    return (DeepLinkResource().set_url(launch_url).set_title(assignment.title).set_lineitem(line_item)
            .set_custom_params({"assignment": assignment.slug}))
