"""`{% picture_words submission part as words %}`: the text alternative of a part's picture, for the
viewer of the page, under the same disclosure as the picture itself."""

from __future__ import annotations

from typing import Any

from django import template

from grader.models import Submission
from grader.pictures import submission_picture_words

register = template.Library()


@register.simple_tag(takes_context=True)
def picture_words(context: dict[str, Any], submission: Submission, part: str) -> dict[str, list[str]] | None:
    request = context.get("request")
    if request is None:
        return None
    return submission_picture_words(submission=submission, user=request.user, part=part)
