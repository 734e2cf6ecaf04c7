"""The result document as plain text for terminals."""

from __future__ import annotations

from typing import Any

from chainrule.result import verdict


def document_as_text(document: dict[str, Any]) -> str:
    lines = [f"{document['assignment']}: {document['score']:g} / {document['max_score']:g}"]
    for part in document["parts"]:
        lines.extend(_part_lines(part))
    return "\n".join(lines)


def _part_lines(part: dict[str, Any]) -> list[str]:
    diagnosis = part.get("diagnosis") or {}
    score = f"({part['score']:g}/{part['max_score']:g})"
    if diagnosis.get("kind") == "unanswered":
        return [f"  {part['part']}: no answer {score}"]
    answer = part["answer"]
    if "\n" in answer:
        answer = f"<code, {answer.count(chr(10)) + 1} lines>"
    lines = [f"  {part['part']} = {answer}: {verdict(part)} {score}"]
    if diagnosis.get("message") and not part["correct"]:
        lines.append(f"    [{diagnosis['kind']}] {diagnosis['message']}")
    if "expected" in part and not part["correct"]:
        shown = str(part.get("expected_text") or part["expected"]).replace("\n", "\n              ")
        lines.append(f"    expected: {shown}")
    return lines
