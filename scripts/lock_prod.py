"""Write requirements-prod.lock: what production images install, and only that, hash-pinned.

The versions are requirements.lock's (the set the tests ran with); the packages are those
requirements.txt needs (pip's resolver, without the development tools); each line carries the
sha256 of the wheel for Linux x86-64 and CPython 3.11 (the image's platform), so an image build
installs exactly these files or fails (`pip install --require-hashes`).

    .venv/bin/python scripts/lock_prod.py        # `make lock-prod`, after `make lock`
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP = [sys.executable, "-m", "pip"]


def _name(requirement: str) -> str:
    return requirement.split("==")[0].strip().lower().replace("_", "-")


def needed() -> set[str]:
    """The packages requirements.txt needs, by pip's resolver (no download of their contents)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([*PIP, "install", "--dry-run", "--ignore-installed", "-q", "--report", str(report),
                        "-r", str(ROOT / "requirements.txt")], check=True)
        return {_name(item["metadata"]["name"]) for item in json.loads(report.read_text())["install"]}


def pins(names: set[str]) -> list[str]:
    """requirements.lock's pins of those packages; a package it lacks is taken as pip resolved it."""
    locked = {_name(line): line.strip() for line in (ROOT / "requirements.lock").read_text().splitlines()
              if "==" in line and not line.lstrip().startswith("#")}
    missing = names - set(locked)
    found = [locked[name] for name in sorted(names & set(locked))]
    if missing:  # installed with the venv but not frozen by pip (setuptools)
        freeze = subprocess.run([*PIP, "list", "--format=json"], check=True, capture_output=True, text=True).stdout
        versions = {_name(item["name"]): item["version"] for item in json.loads(freeze)}
        found += [f"{name}=={versions[name]}" for name in sorted(missing)]
    return [line.replace("torch==2.13.0", "torch==2.13.0+cpu") if line == "torch==2.13.0" else line for line in found]


def hashed(requirements: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "pins.txt"
        listing.write_text("\n".join(requirements) + "\n")
        # This machine's platform is the image's (Linux x86-64, CPython 3.11, glibc ≥ 2.34): its wheels.
        subprocess.run([*PIP, "download", "--no-deps", "-q", "--only-binary", ":all:", "-r", str(listing),
                        "-d", tmp], check=True)
        wheels = {_name(path.name.split("-")[0]): path for path in Path(tmp).glob("*.whl")}
        lines = []
        for requirement in requirements:
            digest = hashlib.sha256(wheels[_name(requirement)].read_bytes()).hexdigest()
            lines.append(f"{requirement} \\\n    --hash=sha256:{digest}")
        return lines


def main() -> None:
    lines = hashed(pins(needed()))
    header = ("# Production only, hash-pinned (scripts/lock_prod.py from requirements.txt and requirements.lock).\n"
              "# torch is the CPU build. Install with:\n"
              "#   pip install --require-hashes --no-deps -r requirements-prod.lock\n")
    (ROOT / "requirements-prod.lock").write_text(header + "\n".join(lines) + "\n")
    print(f"requirements-prod.lock: {len(lines)} packages")


if __name__ == "__main__":
    main()
