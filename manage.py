#!/usr/bin/env python
from __future__ import annotations

import os
import sys
from pathlib import Path

LOCAL_KEY = Path(__file__).resolve().parent / "run" / "secret_key"  # what `make run` wrote


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not os.environ.get("SECRET_KEY") and LOCAL_KEY.is_file():  # a second terminal beside `make run`
        os.environ["SECRET_KEY"] = LOCAL_KEY.read_text().strip()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
