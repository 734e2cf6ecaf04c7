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


def test_a_tls_file_setting_is_a_mounted_path_or_inline_pem_kept_in_a_private_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import stat

    from config.env import envfile

    mounted = tmp_path / "client.key"
    mounted.write_text("-----BEGIN PRIVATE KEY-----\n", encoding="utf-8")
    monkeypatch.setenv("GRADER_TEST_KEY_FILE", str(mounted))
    assert envfile("GRADER_TEST_KEY") == str(mounted)  # used where it is mounted, never copied
    monkeypatch.delenv("GRADER_TEST_KEY_FILE")
    monkeypatch.setenv("GRADER_TEST_KEY", "-----BEGIN PRIVATE KEY-----")
    path = envfile("GRADER_TEST_KEY")
    assert path is not None and Path(path).read_text(encoding="utf-8") == "-----BEGIN PRIVATE KEY-----\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    monkeypatch.delenv("GRADER_TEST_KEY")
    assert envfile("GRADER_TEST_KEY") is None


@pytest.mark.parametrize(("environment", "message"), [
    ({"SANDBOX_ENDPOINTS": "tls://sandbox-a:7000"}, "need SANDBOX_TLS_CA, SANDBOX_TLS_CERT and SANDBOX_TLS_KEY"),
    ({"SANDBOX_ENDPOINTS": "http://sandbox-a:7000"}, "SANDBOX_ENDPOINTS: sandbox endpoint 'http://sandbox-a:7000'"),
    ({"SANDBOX_TLS_CA_FILE": "/etc/hostname"}, "set all of SANDBOX_TLS_CA, SANDBOX_TLS_CERT and SANDBOX_TLS_KEY"),
])
def test_sandbox_endpoint_settings_refuse_an_incomplete_configuration_by_name(
        environment: dict[str, str], message: str) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **environment}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env,
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode != 0 and "ImproperlyConfigured" in done.stderr and message in done.stderr
