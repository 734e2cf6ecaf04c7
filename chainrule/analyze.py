"""`python -m chainrule.analyze`: the sandboxed entry point.

Reads {"program", "params", "parts"[, "max_paths"]} as JSON on stdin and
prints exactly one JSON line on stdout: {"ok": true, "analysis": {…}} or
{"ok": false, "error": "<type>: <message> (program line N)"}. Exit status 0
on success, 1 when the program or request is at fault, 2 on an internal error.
Whatever the program prints is captured, so stdout stays one JSON document."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from chainrule.errors import AnalysisError, ProgramError

MAX_REQUEST_CHARS = 1_000_000


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
    return {"program": request["program"], "params": request.get("params", {}), "parts": parts,
            "max_paths": max_paths}


def respond(text: str) -> tuple[dict[str, Any], int]:
    try:
        request = parse_request(text)
        from chainrule.analysis import analyze_program  # torch is imported here

        analysis = analyze_program(**request)
        return {"ok": True, "analysis": analysis.to_json()}, 0
    except ProgramError as error:
        return {"ok": False, "error": str(error)}, 1
    except (AnalysisError, json.JSONDecodeError) as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}, 1
    except Exception as error:  # noqa: BLE001 - the caller must always get one JSON answer
        return {"ok": False, "error": f"internal error: {type(error).__name__}: {error}"}, 2


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    payload, status = respond(stdin.read())
    stdout.write(json.dumps(payload, allow_nan=False) + "\n")
    stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
