"""Student code cannot forge or alter its code part's result.

The harness process composes every report; the child that runs the student's code sends back
only its per-point records. Each attack below runs beside a wrong `grad_z` (it returns 0, 0) and
tries to report the seed point's right answer (7, 2, which the statement gives away) instead.

What the child sends is, by construction, what the student's code produced: code that takes over
its own process can always make its records say what it wants, exactly as it could return it. So
the last attacks get their numbers through as the student's values, and are graded as such."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainrule.code.harness import harness_source
from chainrule.code.student_process import UNREADABLE
from sandbox import Limits, run_job
from tests.test_code_and_symbolic import grade_code

POINTS = [{"x0": 2.0, "y0": 3.0}, {"x0": 1.0, "y0": -2.0}, {"x0": -1.5, "y0": 0.5}]
FORGED_REPORT = {"ok": True, "error": None, "stdout": "",
                 "points": [{"values": {"0": 7.0, "1": 2.0}, "error": None}] * len(POINTS)}
FORGED_RECORDS = {"points": FORGED_REPORT["points"], "stdout": ""}
WRONG = "\ndef grad_z(x, y):\n    return 0.0, 0.0\n"
HONEST = {"ok": True, "error": None, "stdout": "",
          "points": [{"values": {"0": 0.0, "1": 0.0}, "error": None}] * len(POINTS)}
_PAYLOADS = f"import json, os, sys\nREPORT = {FORGED_REPORT!r}\nRECORDS = {FORGED_RECORDS!r}\n"
_EVERY_FD = ("for fd in range(1024):\n    for doc in (REPORT, RECORDS):\n        try:\n"
             "            os.write(fd, json.dumps(doc).encode())\n        except OSError:\n            pass\n")

ATTACKS: dict[str, str] = {
    "sandbox_guest.emit": "import sandbox_guest\ntry:\n    sandbox_guest.emit(REPORT)\nexcept Exception:\n    pass\n",
    "os.write to every fd": _EVERY_FD,
    "/proc/self/fd": ("for name in os.listdir('/proc/self/fd'):\n    try:\n"
                      "        with open(f'/proc/self/fd/{name}', 'w') as f:\n"
                      "            f.write(json.dumps(RECORDS))\n    except OSError:\n        pass\n"),
    "the harness process's fds": ("for name in range(64):\n    try:\n"
                                  "        with open(f'/proc/{os.getppid()}/fd/{name}', 'w') as f:\n"
                                  "            f.write(json.dumps(REPORT))\n    except OSError:\n        pass\n"),
    "patching the harness module": ("import chainrule.code.harness as h, chainrule.code.student_process as p\n"
                                    "h._report = lambda *a, **k: REPORT\np._records = lambda *a: RECORDS\n"
                                    "p.records_in_child = lambda *a: RECORDS\n"),
    "sys.modules": ("import types\nfake = types.ModuleType('json')\nfake.dumps = lambda *a, **k: json.dumps(REPORT)\n"
                    "fake.loads = json.loads\nsys.modules['json'] = fake\n"
                    "sys.modules['chainrule.code.harness'] = types.SimpleNamespace(run_harness=lambda job: REPORT)\n"),
    "os._exit after writing junk": _EVERY_FD + "os._exit(0)\n",
}
# These reach the report, but only as the values the student's code gave at each point.
AS_VALUES: dict[str, str] = {
    "patching os.write in its own process": ("real_write = os.write\n"
                                             "os.write = lambda fd, data: real_write(fd, json.dumps(RECORDS).encode()) "
                                             "and len(data)\n"),
    "os._exit after a well-formed fake write": ("for fd in range(3, 64):\n    try:\n"
                                                "        os.write(fd, json.dumps(RECORDS).encode())\n"
                                                "    except OSError:\n        pass\nos._exit(0)\n"),
}


def harness(job: Any, socket_path: str) -> Any:
    result = run_job(source=harness_source(), input=job, limits=Limits(), socket_path=socket_path)
    assert result.status == "ok", result
    return result.result


def job_for(source: str) -> dict[str, Any]:
    return {"mode": "function", "source": source, "points": POINTS, "function": "grad_z", "args": ["x0", "y0"],
            "returns": 2}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_result_never_becomes_the_reported_one(sandbox_socket: str, attack: str) -> None:
    report = harness(job_for(_PAYLOADS + ATTACKS[attack] + WRONG), sandbox_socket)
    if report != HONEST:  # what the function returned, or nothing the child wrote at all
        assert report == {"ok": False, "error": UNREADABLE, "points": [], "stdout": ""}, report
    assert json.dumps(FORGED_REPORT["points"][0]) not in json.dumps(report)


@pytest.mark.parametrize("attack", list(AS_VALUES))
def test_a_record_forged_in_the_childs_own_process_is_only_its_values(sandbox_socket: str, attack: str) -> None:
    report = harness(job_for(_PAYLOADS + AS_VALUES[attack] + WRONG), sandbox_socket)
    assert report == {**HONEST, "points": FORGED_REPORT["points"]}  # composed by the harness process


@pytest.mark.parametrize("attack", [*ATTACKS, *AS_VALUES])
@pytest.mark.django_db
def test_no_forgery_earns_a_point(tmp_path: Path, attack: str) -> None:
    source = {**ATTACKS, **AS_VALUES}[attack]
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", _PAYLOADS + source + WRONG)
    assert not result["correct"] and result["score"] == 0, result


def test_one_part_cannot_write_another_parts_report(sandbox_socket: str) -> None:
    """A process left behind by the first part's code (even in a session of its own) outlives it and
    tries every descriptor it can reach while the second part runs."""
    lurker = (_PAYLOADS + "import time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(0.2)\n"
              "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
              "        for fd in range(64):\n            try:\n"
              "                with open(f'/proc/{pid}/fd/{fd}', 'w') as f:\n"
              "                    f.write(json.dumps(RECORDS))\n            except OSError:\n                pass\n"
              "    os._exit(0)\n" + WRONG)
    slow_but_right = "import time\n\ndef grad_z(x, y):\n    time.sleep(0.2)\n    return y + 2 * x, x\n"
    first, second = harness({"parts": [job_for(lurker), job_for(slow_but_right)]}, sandbox_socket)["parts"]
    assert first in (HONEST, {"ok": False, "error": UNREADABLE, "points": [], "stdout": ""})  # it wrote into its own
    assert second["ok"] is True and [p["values"] for p in second["points"]] == [
        {"0": y + 2 * x, "1": x} for x, y in ((p["x0"], p["y0"]) for p in POINTS)]
