"""Settings read from the environment, or from a file a secret is mounted as (`<NAME>_FILE`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import envint, envstr


def test_a_value_comes_from_the_file_its_FILE_variable_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "secret_key"
    secret.write_text("s3cret value\n", encoding="utf-8")  # as `echo … > file` writes it
    monkeypatch.delenv("GRADER_TEST_SECRET", raising=False)
    monkeypatch.setenv("GRADER_TEST_SECRET_FILE", str(secret))
    assert envstr("GRADER_TEST_SECRET", "") == "s3cret value"
    (tmp_path / "n").write_text("7", encoding="utf-8")
    monkeypatch.setenv("GRADER_TEST_N_FILE", str(tmp_path / "n"))
    assert envint("GRADER_TEST_N", 1) == 7


def test_both_the_variable_and_its_file_or_an_unreadable_file_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_TEST_SECRET", "inline")
    monkeypatch.setenv("GRADER_TEST_SECRET_FILE", str(tmp_path / "x"))
    with pytest.raises(ImproperlyConfigured, match="not both"):
        envstr("GRADER_TEST_SECRET", "")
    monkeypatch.delenv("GRADER_TEST_SECRET")
    with pytest.raises(ImproperlyConfigured, match="cannot be read"):
        envstr("GRADER_TEST_SECRET", "")
