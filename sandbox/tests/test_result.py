"""The response is untrusted: the client checks its schema and sizes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.job_response import InvalidResponse, JobResult, parse_response
from sandbox.limits import Limits

LIMITS = Limits(output_bytes=1024, result_bytes=1024)


def _document(**changes: Any) -> dict[str, Any]:
    document = {"v": 1, "backend": "hardened", "status": "ok", "exit_code": 0, "signal": None,
                "stdout": "hi\n", "stdout_truncated": False, "stderr": "", "stderr_truncated": False,
                "result_json": '{"x": 1}', "error": None, "timings": {"run_ms": 3.5}}
    document.update(changes)
    return document


def test_a_valid_document_parses() -> None:
    result = parse_response(_document(), LIMITS)
    assert result == JobResult(status="ok", exit_code=0, stdout="hi\n", result={"x": 1}, timings={"run_ms": 3.5})
    assert json.loads(result.to_json())["result"] == {"x": 1}


@pytest.mark.parametrize("changes", [
    {"status": "passed"},
    {"backend": "docker"},
    {"exit_code": "0"},
    {"exit_code": 2**40},
    {"stdout": "x" * 1025},
    {"stdout_truncated": "no"},
    {"error": 5},
    {"timings": {"run_ms": -1}},
    {"timings": {"run_ms": float("inf")}},
    {"timings": {f"t{i}": 1 for i in range(17)}},
    {"result_json": 42},
])
def test_it_rejects_a_malformed_document(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidResponse):
        parse_response(_document(**changes), LIMITS)


def test_a_bad_result_is_the_jobs_error_not_ours() -> None:
    assert parse_response(_document(result_json="{not json"), LIMITS).status == "error"
    deep = parse_response(_document(result_json="[" * 100_000 + "]" * 100_000), Limits())
    assert (deep.status, deep.result) == ("error", None)
    big = parse_response(_document(result_json='"' + "x" * 2000 + '"'), LIMITS)
    assert (big.status, big.error) == ("error", "Result larger than 1024 bytes")


def test_nothing_emitted_is_none() -> None:
    assert parse_response(_document(result_json=None), LIMITS).result is None
