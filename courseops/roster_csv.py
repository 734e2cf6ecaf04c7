"""Reading a roster CSV (username, email, name, role, section): pure, no database.

Every problem is reported against its line so the instructor can fix the file; nothing is written
from a file with problems.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

from assignments.access import USERNAME_RE

COLUMNS = ("username", "email", "name", "role", "section")
REQUIRED = ("username",)
ROLES = ("student", "ta", "instructor")
MAX_BYTES = 1_000_000
MAX_ROWS = 5000
EMAIL = re.compile(r"^[^@\s,;]+@[^@\s,;]+\.[^@\s,;]+$")


@dataclass(frozen=True)
class RosterLine:
    line: int
    username: str
    email: str
    name: str
    role: str
    section: str


@dataclass(frozen=True)
class LineError:
    line: int
    message: str


class RosterFileError(ValueError):
    """The file as a whole cannot be read (encoding, size, header)."""


def _decoded(data: bytes) -> str:
    if len(data) > MAX_BYTES:
        raise RosterFileError(f"The file is larger than {MAX_BYTES // 1000} kB.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RosterFileError("The file is not UTF-8 text: save it as CSV UTF-8.") from None


def _header(reader: Iterator[list[str]]) -> list[str]:
    header = [cell.strip().lower() for cell in next(reader, [])]
    missing = [column for column in REQUIRED if column not in header]
    unknown = [column for column in header if column and column not in COLUMNS]
    if missing or unknown:
        raise RosterFileError(f"The first line must name the columns {', '.join(COLUMNS)} (username required); "
                              f"missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}.")
    return header


def roster_parse(data: bytes) -> tuple[list[RosterLine], list[LineError]]:
    """Lines (numbered as in a spreadsheet: the header is line 1) and the problems found."""
    reader = csv.reader(io.StringIO(_decoded(data)))
    try:
        header = _header(reader)
        rows = list(reader)
    except csv.Error as exc:
        raise RosterFileError(f"The file is not valid CSV: {exc}.") from None
    if len(rows) > MAX_ROWS:
        raise RosterFileError(f"At most {MAX_ROWS} students per file.")
    lines: list[RosterLine] = []
    errors: list[LineError] = []
    seen: dict[str, int] = {}
    for number, cells in enumerate(rows, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        values = {column: (cells[i].strip() if i < len(cells) else "") for i, column in enumerate(header)}
        problem = _problem(values, seen)
        if problem:
            errors.append(LineError(number, problem))
            continue
        seen[values["username"].lower()] = number
        lines.append(RosterLine(line=number, username=values["username"], email=values.get("email", ""),
                                name=values.get("name", ""), role=(values.get("role") or "student").lower(),
                                section=values.get("section", "")))
    return lines, errors


def _problem(values: dict[str, str], seen: dict[str, int]) -> str:
    username, email = values.get("username", ""), values.get("email", "")
    role = (values.get("role") or "student").lower()
    if any("\x00" in value for value in values.values()):  # PostgreSQL cannot store it (a 500 on apply)
        return "contains a NUL character"
    if not USERNAME_RE.match(username):
        return f"username {username[:40]!r}: use 1–150 letters, digits and @.+-_"
    if username.lower() in seen:
        return f"username {username!r} is already on line {seen[username.lower()]}"
    if email and not EMAIL.match(email):
        return f"email {email[:60]!r} is not an address"
    if role not in ROLES:
        return f"role {role[:20]!r}: use student, ta or instructor"
    if len(values.get("name", "")) > 150 or len(values.get("section", "")) > 64:
        return "name (150) or section (64 characters) is too long"
    return ""
