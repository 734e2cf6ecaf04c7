"""`python -m chainrule.analysis.cli`: the sandboxed entry point.

Reads {"program", "params", "parts"[, "max_paths"]} as JSON on stdin and
prints exactly one JSON line on stdout: {"ok": true, "analysis": {…}} or
{"ok": false, "error": "<type>: <message> (program line N)"}. Exit status 0
on success, 1 when the program or request is at fault, 2 on an internal error.
Whatever the program prints is captured, so stdout stays one JSON document.

With "points": [params, …] instead of "params", the program is analysed at
each evaluation point (chainrule.evaluation_points) in one run: {"ok": true,
"analyses": [{…} | null, …], "errors": [null | "<message>", …]}. A point
where the program fails gets null and its error, so the grader can drop it
(chainrule.evaluation_points.usable_points); the request fails only if it is malformed."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from chainrule.errors import AnalysisError, ProgramError

MAX_REQUEST_CHARS = 1_000_000
MAX_POINTS = 64


def parse_request(text: str) -> dict[str, Any]:
    if len(text) > MAX_REQUEST_CHARS:
        raise AnalysisError("request too large")
    request = json.loads(text)
    if not isinstance(request, dict):
        raise AnalysisError("the request must be a JSON object")
    if not isinstance(request.get("program"), str):
        raise AnalysisError('"program" must be a string')
    if not isinstance(request.get("params", {}), dict):
        raise AnalysisError('"params" must be an object')
    parts = request.get("parts")
    if not isinstance(parts, list) or not all(isinstance(part, str) for part in parts):
        raise AnalysisError('"parts" must be a list of strings such as "x.grad"')
    max_paths = request.get("max_paths", 64)
    if not isinstance(max_paths, int) or isinstance(max_paths, bool) or not 1 <= max_paths <= 1024:
        raise AnalysisError('"max_paths" must be an integer between 1 and 1024')
    parsed = {"program": request["program"], "params": request.get("params", {}), "parts": parts,
              "max_paths": max_paths}
    if "points" in request:
        points = request["points"]
        if not isinstance(points, list) or not 1 <= len(points) <= MAX_POINTS or \
                not all(isinstance(point, dict) for point in points):
            raise AnalysisError(f'"points" must be a list of 1 to {MAX_POINTS} parameter objects')
        parsed["points"] = points
    return parsed


def respond(text: str) -> tuple[dict[str, Any], int]:
    try:
        request = parse_request(text)
        from chainrule.analysis.program import analyze_program  # torch is imported here

        if "points" in request:
            return _analyses_at_points(request), 0
        analysis = analyze_program(**request)
        return {"ok": True, "analysis": analysis.to_json()}, 0
    except ProgramError as error:
        return {"ok": False, "error": str(error)}, 1
    except (AnalysisError, json.JSONDecodeError) as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}, 1
    except Exception as error:  # the caller must always get one JSON answer
        return {"ok": False, "error": f"internal error: {type(error).__name__}: {error}"}, 2


def _analyses_at_points(request: dict[str, Any]) -> dict[str, Any]:
    from chainrule.analysis.program import analyze_program

    analyses: list[dict[str, Any] | None] = []
    errors: list[str | None] = []
    for point in request["points"]:
        try:
            analysis = analyze_program(program=request["program"], params=point, parts=request["parts"],
                                       max_paths=request["max_paths"])
        except (ProgramError, AnalysisError) as error:
            analyses.append(None)
            errors.append(str(error))
        else:
            analyses.append(analysis.to_json())
            errors.append(None)
    return {"ok": True, "analyses": analyses, "errors": errors}


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    payload, status = respond(stdin.read())
    stdout.write(json.dumps(payload, allow_nan=False) + "\n")
    stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
