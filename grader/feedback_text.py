"""The result document as plain text for terminals."""

from __future__ import annotations

from typing import Any


def document_as_text(document: dict[str, Any]) -> str:
    lines = [f"{document['assignment']}: {document['score']:g} / {document['max_score']:g}"]
    for part in document["parts"]:
        mark = "correct" if part["correct"] else "incorrect"
        lines.append(f"  {part['part']} = {part['answer']}: {mark} ({part['score']:g}/{part['max_score']:g})")
        diagnosis = part.get("diagnosis") or {}
        if diagnosis.get("message"):
            lines.append(f"    [{diagnosis['kind']}] {diagnosis['message']}")
        if "expected" in part and not part["correct"]:
            lines.append(f"    expected: {part['expected']}")
    return "\n".join(lines)
