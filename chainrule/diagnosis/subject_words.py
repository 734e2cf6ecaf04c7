"""Feedback about what the student wrote, in the student's terms: a function part's return value
is "your dz_dx", a formula part's answer "your formula"; never "your x.grad" for a .grad the
student never wrote. The numeric messages speak of the part (x.grad); this rewrites
each mention of it."""

from __future__ import annotations

import re


def spoken_of(message: str, *, part: str, subject: str | None) -> str:
    """`message` with every mention of `part` ("x.grad", "Your x.grad") as "your <subject>"."""
    if not subject or subject == part:
        return message
    mention = re.compile(r"(?<![\w.])(?:([Yy])our\s+)?" + re.escape(part) + r"(?![\w])")

    def replaced(found: re.Match[str]) -> str:
        article = found.group(1)
        if article is None:
            before = message[: found.start()].rstrip()
            if before and not before.endswith((".", ":")):
                # mid-sentence, x.grad is the program's (“never zeroes x.grad”), not what the student wrote
                return found.group(0)
            article = "Y" if not before or before.endswith(".") else "y"
        return f"{article}our {subject}"

    return mention.sub(replaced, message)
