"""A JSON parser whose failures are 400s: bounded size and depth, valid Unicode only.

The stock parser lets `json.loads` raise RecursionError on a body nested 100,000 deep,
and accepts lone surrogates (`"\\ud800"`) that no database can store: both were 500s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import exception_handler

from infra.nested_data import TOO_DEEP, nested_problem

MAX_BODY_BYTES = 2 * 1024 * 1024  # 50 code parts of 20,000 characters fit, with room for escapes
MAX_DEPTH = 8  # the submission body is {"answers": {key: text}, "code": {key: source}}


class BoundedJSONParser(JSONParser):
    def parse(self, stream: IO[bytes] | None, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read(MAX_BODY_BYTES + 1) if stream is not None else b""
        if len(raw) > MAX_BODY_BYTES:
            raise ParseError(f"The request body is larger than {MAX_BODY_BYTES // 1024} KiB.")
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except UnicodeDecodeError:
            raise ParseError("The request body is not UTF-8.") from None
        except RecursionError:
            raise ParseError(f"The JSON is nested too deeply (at most {MAX_DEPTH} levels).") from None
        except ValueError as exc:
            raise ParseError(f"The request body is not valid JSON: {exc}") from None
        json_problem = _shape_problem(data)
        if json_problem:
            raise ParseError(json_problem)
        return data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _shape_problem(data: Any) -> str | None:
    """Depth beyond MAX_DEPTH or a string (key or value) that is not valid Unicode; walked
    without recursion, in time linear in the (bounded) body."""
    problem = nested_problem(data, max_depth=MAX_DEPTH - 1, text_problem=_surrogate_problem)
    return f"The JSON is nested too deeply (at most {MAX_DEPTH} levels)." if problem == TOO_DEEP else problem


def _surrogate_problem(text: str) -> str | None:
    if _is_unicode(text):
        return None
    return "The JSON contains a lone surrogate (such as \\ud800), which is not valid Unicode text."


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus a JSON 413 for a body past Django's DATA_UPLOAD_MAX_MEMORY_SIZE: Django
    refuses it while DRF reads `request.data`, before any parser runs, and answered with the bare
    HTML "Bad Request (400)" page, no message for a script."""
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"The request body is larger than {MAX_BODY_BYTES // 1024} KiB."}, status=413)
    return exception_handler(exc, context)


def flat_errors(errors: Any) -> dict[str, str]:
    """DRF's nested error lists as one message per field, the shape of the answer errors."""
    if not isinstance(errors, dict):
        return {"body": " ".join(map(str, errors))}
    flat = {}
    for key, value in errors.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{inner}": msg for inner, msg in flat_errors(value).items()})
        else:
            flat["body" if key == "non_field_errors" else key] = " ".join(map(str, value))
    return flat


def flat_detail(errors: Any) -> str:
    """The same as one sentence, for answers whose shape is {"detail": …}."""
    return "; ".join(f"{field}: {message}" for field, message in flat_errors(errors).items())
