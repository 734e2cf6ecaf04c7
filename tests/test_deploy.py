"""docker-compose.yml runs what the code is: its commands name modules, queues and scripts that
exist, and the web container starts whatever the catalog holds (drafts are normal, a malformed
file is logged)."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SERVICES: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
APP_DIR = "/app"  # the Dockerfile's WORKDIR, where the repository is copied


def _argv(service: str) -> list[str]:
    return shlex.split(SERVICES[service]["command"])


def test_the_sandbox_service_preloads_and_exposes_modules_that_exist() -> None:
    from sandbox.__main__ import build_parser

    argv = _argv("sandbox")
    assert argv[:3] == ["python", "-m", "sandbox"]
    args = build_parser().parse_args(argv[3:])
    assert "chainrule.analysis" in args.preload  # torch warm in the zygote, as scripts/start_sandbox.sh
    for module in args.preload:
        assert importlib.util.find_spec(module) is not None, module
    for directory in args.package_dir:
        assert directory.startswith(f"{APP_DIR}/") and (ROOT / directory[len(APP_DIR) + 1:]).is_dir(), directory
    health = SERVICES["sandbox"]["healthcheck"]["test"]
    assert health[1:4] == ["python", "-m", "sandbox"] and build_parser().parse_args(health[4:]).socket == args.socket


def test_one_worker_service_consumes_each_lane_and_every_command_names_real_code() -> None:
    from config.celery_app import app
    from infra.lanes import CODE, MAINTENANCE, NUMERIC, queue_name

    assert "CELERY_QUEUE" not in SERVICES["web"]["environment"]  # so the default queue's name is used
    session_queue, app.conf.task_default_queue = app.conf.task_default_queue, "grading"  # a test session has its own
    try:
        lanes = {queue_name(lane=lane) for lane in (NUMERIC, CODE, MAINTENANCE)}
    finally:
        app.conf.task_default_queue = session_queue
    consumed = {_argv(name)[_argv(name).index("-Q") + 1] for name in SERVICES if name.startswith("worker-")}
    assert consumed == lanes
    for name in [*[s for s in SERVICES if s.startswith("worker-")], "beat"]:
        assert _argv(name)[:3] == ["celery", "-A", "config"]
    web = _argv("web")
    assert web[0] == "sh" and (ROOT / web[1]).is_file()
    assert "config.wsgi" in (ROOT / web[1]).read_text() and importlib.util.find_spec("config.wsgi") is not None
    for name in ("web", *[s for s in SERVICES if s.startswith("worker-")]):
        assert SERVICES[name]["depends_on"]["sandbox"] == {"condition": "service_healthy"}, name


@pytest.mark.integration
def test_the_web_starts_with_a_draft_and_a_malformed_file_in_the_catalog(
        live_db: None, sandbox_socket: str, tmp_path: Path) -> None:
    import sys

    from conftest import free_port, service_env, stop_process

    tag = uuid.uuid4().hex[:6]
    weak, bad = f"web-weak-{tag}", f"web-bad-{tag}"
    # z = 3x² at x0 = 0: dz/dx = 0, so the answer 0 passes and vetting keeps the file as a draft.
    (tmp_path / f"{weak}.toml").write_text(
        f'slug = "{weak}"\ntitle = "W"\nstatement = "s"\nreference = """\nx = torch.tensor(x0, requires_grad=True)\n'
        'z = 3 * x**2\nz.backward()\n"""\n[params]\nx0 = 0.0\n[[parts]]\nkey = "x.grad"\n', encoding="utf-8")
    (tmp_path / f"{bad}.toml").write_text('slug = "unclosed\n', encoding="utf-8")
    port = free_port()
    log = tmp_path / "web.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["sh", "scripts/web_start.sh", str(tmp_path)], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=service_env(PYTHON=sys.executable, BIND=f"127.0.0.1:{port}", WEB_WORKERS="1"))
    try:
        page = _get_when_up(f"http://127.0.0.1:{port}/accounts/login/", proc, log)
        assert "Log in" in page or "login" in page.lower()
    finally:
        stop_process(proc)
    text = log.read_text(errors="replace")
    assert f"kept as a draft {weak}" in text and "the answer 0 passes" in text
    assert f"error: {bad}.toml: file: is not valid TOML" in text
    assert "web: load_assignments exited 2" in text


def _get_when_up(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the web start exited ({proc.returncode}):\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # a local test server
                return str(response.read().decode())
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"the web server never answered:\n{log.read_text(errors='replace')}")
