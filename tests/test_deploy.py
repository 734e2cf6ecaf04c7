"""The shipped deployment runs what the code is and what an operator needs: docker-compose.yml's
commands name modules, queues and scripts that exist; every setting and secret reaches the containers
(no password in the file); a release step migrates and loads the catalog once, not every web replica;
the web tier sits behind a buffering TLS proxy; the image installs production packages only, checked
by hash, and runs as a user of its own. Checked offline: no container daemon is reachable here."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
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
    from infra.lanes import LANES, queue_name

    assert "CELERY_QUEUE" not in SERVICES["web"]["environment"]  # so the default queue's name is used
    session_queue, app.conf.task_default_queue = app.conf.task_default_queue, "grading"  # a test session has its own
    try:
        lanes = {queue_name(lane=lane) for lane in LANES}
    finally:
        app.conf.task_default_queue = session_queue
    consumed = {_argv(name)[_argv(name).index("-Q") + 1] for name in SERVICES if name.startswith("worker-")}
    assert consumed == lanes
    for name in [*[s for s in SERVICES if s.startswith("worker-")], "beat"]:
        assert _argv(name)[:3] == ["celery", "-A", "config"]
    web = _argv("web")
    assert web[0] == "sh" and (ROOT / web[1]).is_file()
    assert "config.wsgi" in (ROOT / web[1]).read_text() and importlib.util.find_spec("config.wsgi") is not None
    for name in SANDBOX_USERS:  # they run sandbox jobs
        assert SERVICES[name]["depends_on"]["sandbox"] == {"condition": "service_healthy"}, name


SANDBOX_USERS = ("release", "worker-numeric", "worker-code", "worker-maintenance")


def test_only_the_sandbox_host_is_privileged_and_the_workers_that_run_jobs_reach_it_over_mutual_tls() -> None:
    from sandbox.__main__ import build_parser
    from sandbox.network import parse_endpoints

    privileged = {name for name, service in SERVICES.items()
                  if service.get("cap_add") or service.get("user") == "0" or service.get("security_opt")}
    assert privileged == {"sandbox"}
    server = build_parser().parse_args(_argv("sandbox")[3:])
    assert server.listen == "0.0.0.0:7000" and not SERVICES["sandbox"].get("ports")  # never published
    secrets = {name: spec["file"] for name, spec in yaml.safe_load(
        (ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["secrets"].items()}
    mounted = {f"/run/secrets/{name}" for name in SERVICES["sandbox"]["secrets"]}
    assert {server.tls_ca, server.tls_cert, server.tls_key} == mounted
    for name in SERVICES:
        environment = SERVICES[name].get("environment") or {}
        if name in SANDBOX_USERS:
            assert [e.host for e in parse_endpoints(environment["SANDBOX_ENDPOINTS"])] == ["sandbox"], name
            for part in ("CA", "CERT", "KEY"):
                path = environment[f"SANDBOX_TLS_{part}_FILE"]
                assert path.removeprefix("/run/secrets/") in SERVICES[name]["secrets"], (name, part)
        elif name in APP_SERVICES:
            assert environment["SANDBOX_ENDPOINTS"] == "none", name  # web, beat, the LMS lane: no sandbox
    # the files deploy/make-secrets.sh writes, with the server certificate named for the compose service
    assert secrets["sandbox_server_cert"] == "./secrets/sandbox-tls/server-sandbox.crt"
    assert "sandbox" in (ROOT / "deploy" / "make-secrets.sh").read_text().split("SANDBOX_HOSTS:-", 1)[1][:10]


APP_SERVICES = ("release", "web", "worker-numeric", "worker-code", "worker-maintenance", "worker-lms", "beat")


def test_settings_and_secrets_reach_every_process_and_no_secret_is_in_the_file() -> None:
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    for name in APP_SERVICES:
        service = SERVICES[name]
        assert service["env_file"] == ["grader.env"], name  # CSRF_TRUSTED_ORIGINS and the rest arrive
        assert {"secret_key", "database_url", "redis_url"} <= set(service["secrets"]), name
        assert service["environment"]["SECRET_KEY_FILE"] == "/run/secrets/secret_key", name
        assert service["environment"]["TRUST_X_FORWARDED_PROTO"] == "1", name  # behind the TLS proxy
    assert "POSTGRES_PASSWORD:" not in text and "grader:grader@" not in text
    assert "--requirepass" in SERVICES["redis"]["command"]
    assert (ROOT / "deploy" / "grader.env.example").is_file() and (ROOT / "deploy" / "make-secrets.sh").is_file()


def test_only_the_tls_proxy_faces_clients_and_the_release_step_runs_before_the_rest() -> None:
    published = {name for name, service in SERVICES.items() if service.get("ports")}
    assert published == {"proxy"}
    conf = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    assert "proxy_request_buffering on" in conf and "client_body_timeout" in conf and "ssl_certificate" in conf
    assert _argv("release")[:2] == ["sh", "scripts/release.sh"] and SERVICES["release"]["restart"] == "no"
    for name in APP_SERVICES[1:]:
        assert SERVICES[name]["depends_on"]["release"] == {"condition": "service_completed_successfully"}, name
    assert "migrate" not in (ROOT / "scripts" / "web_start.sh").read_text()
    assert "/tmp" not in SERVICES["beat"]["command"] and SERVICES["beat"]["deploy"]["replicas"] == 1


def test_the_image_installs_production_packages_by_hash_and_runs_as_its_own_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "--require-hashes" in dockerfile and "requirements-prod.lock" in dockerfile
    assert "requirements.lock" not in dockerfile.replace("requirements-prod.lock", "")
    assert "whl/cpu" in dockerfile  # the CPU build of torch
    users = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")]
    assert users and users[-1] != "root"
    lock = (ROOT / "requirements-prod.lock").read_text(encoding="utf-8")
    pins = [line.split(" ")[0] for line in lock.splitlines() if "==" in line]
    names = {pin.split("==")[0].lower().replace("_", "-") for pin in pins}
    assert lock.count("--hash=sha256:") == len(pins) > 0
    assert not names & {"pytest", "mypy", "ruff", "playwright", "lti1p3platform", "hypothesis", "import-linter"}
    needed = {line.split("==")[0].split("[")[0].lower().replace("_", "-")
              for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line}
    assert needed <= names and "torch==2.13.0+cpu" in pins


def test_the_compose_file_passes_the_compose_specification_and_names_only_what_it_declares() -> None:
    """What `docker compose config` checks, offline (no container tool here): the Compose
    Specification's schema (tests/schemas/, vendored by scripts/vendor_compose_schema.sh), then every
    secret, named volume and dependency a service names is declared."""
    import json

    import jsonschema

    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "tests" / "schemas" / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft201909Validator(schema)
    problems = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
                for error in validator.iter_errors(document)]
    assert not problems, problems
    web = {**document["services"]["web"], "restrat": "no"}
    misspelt = {**document, "services": {**document["services"], "web": web}}
    assert not validator.is_valid(misspelt)  # the schema refuses what compose would
    services, secrets, volumes = document["services"], set(document["secrets"]), set(document["volumes"])
    for name, service in services.items():
        assert set(service.get("secrets", [])) <= secrets, name
        assert set(service.get("depends_on", {})) <= set(services) - {name}, name
        named = {volume.split(":")[0] for volume in service.get("volumes", []) if not volume.startswith((".", "/"))}
        assert named <= volumes, name


def _image_uid() -> int:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    return int(dockerfile.split("--uid ", 1)[1].split()[0])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("openssl") is None,
                    reason="owning files for another uid needs root, and the certificates openssl")
def test_every_secret_a_container_reads_is_readable_by_its_user_and_by_nobody_else(tmp_path: Path) -> None:
    """Compose mounts a file secret with the host file's owner and mode: a root-only file is unreadable
    to web and workers, which run as the image's user, and they would not start."""
    run = subprocess.run(["sh", "deploy/make-secrets.sh"], cwd=ROOT, env={**os.environ, "SECRETS_DIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "could not give" not in run.stderr, run.stderr
    files = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["secrets"]
    uid = _image_uid()
    for name, service in SERVICES.items():
        reader = 0 if str(service.get("user", "")) == "0" or "image" in service and "build" not in service else uid
        for secret in service.get("secrets", []):
            path = tmp_path / Path(files[secret]["file"]).relative_to("secrets")
            info = path.stat()
            assert info.st_mode & 0o077 == 0, (name, secret, oct(info.st_mode))  # nobody else on the host
            if reader != 0:
                assert info.st_uid == reader and info.st_mode & 0o400, (name, secret, info.st_uid)
    assert (tmp_path / "postgres_password").stat().st_uid == 0  # only root-run containers read these


@pytest.mark.integration
def test_the_release_step_loads_a_draft_and_logs_a_malformed_file_and_twice_changes_nothing(
        live_db: None, sandbox_socket: str, tmp_path: Path) -> None:
    import sys

    from conftest import service_env

    tag = uuid.uuid4().hex[:6]
    weak, bad = f"web-weak-{tag}", f"web-bad-{tag}"
    # z = 3x² at x0 = 0: dz/dx = 0, so the answer 0 passes and vetting keeps the file as a draft.
    (tmp_path / f"{weak}.toml").write_text(
        f'slug = "{weak}"\ntitle = "W"\nstatement = "s"\nreference = """\nx = torch.tensor(x0, requires_grad=True)\n'
        'z = 3 * x**2\nz.backward()\n"""\n[params]\nx0 = 0.0\n[[parts]]\nkey = "x.grad"\n', encoding="utf-8")
    (tmp_path / f"{bad}.toml").write_text('slug = "unclosed\n', encoding="utf-8")
    env = service_env(PYTHON=sys.executable)
    runs = [subprocess.run(["sh", "scripts/release.sh", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0]  # drafts and refusals are logged, not a failed release
    first, second = (run.stdout + run.stderr for run in runs)
    assert f"kept as a draft {weak}" in first and "the answer 0 passes" in first
    assert f"error: {bad}.toml: file: is not valid TOML" in first and "load_assignments exited 2" in first
    assert "No migrations to apply" in second and "published " not in second, second  # nothing new
    from assignments.models import Assignment

    assert Assignment.objects.filter(slug=weak).count() == 1


def test_without_a_named_catalog_the_release_step_loads_none() -> None:
    text = (ROOT / "scripts" / "release.sh").read_text()
    assert "GRADER_RELEASE_CATALOG" in text and "assignments/catalog" not in text  # never the demo by default


@pytest.mark.integration
def test_a_web_replica_serves_without_migrating(live_db: None, tmp_path: Path) -> None:
    import sys

    from conftest import free_port, service_env, stop_process

    port = free_port()
    log = tmp_path / "web.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["sh", "scripts/web_start.sh"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                env=service_env(PYTHON=sys.executable, BIND=f"127.0.0.1:{port}", WEB_WORKERS="1"))
    try:
        page = _get_when_up(f"http://127.0.0.1:{port}/healthz/live", proc, log)
        assert '"ok"' in page
    finally:
        stop_process(proc)
    assert "migrat" not in log.read_text(errors="replace").lower()


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


KUBERNETES = ROOT / "deploy" / "kubernetes"


def _manifests() -> list[dict[str, Any]]:
    return [doc for path in sorted(KUBERNETES.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def test_the_kubernetes_manifests_pass_the_schemas_of_kubernetes_1_30() -> None:
    import kubernetes_validate

    documents = _manifests()
    assert len(documents) >= 12
    for document in documents:
        kubernetes_validate.validate(document, "1.30.0", strict=True)  # raises on any unknown or wrong field


def test_the_kubernetes_topology_is_the_production_one() -> None:
    by_kind: dict[str, dict[str, Any]] = {}
    for document in _manifests():
        by_kind.setdefault(document["kind"], {})[document["metadata"]["name"]] = document
    web = by_kind["Deployment"]["grader-web"]["spec"]["template"]["spec"]["containers"][0]
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz/live"
    assert web["readinessProbe"]["httpGet"]["path"] == "/healthz/ready"
    assert "grader-web" in by_kind["HorizontalPodAutoscaler"] and "grader-web" in by_kind["PodDisruptionBudget"]
    assert by_kind["Job"]["grader-release"]["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "sh", "scripts/release.sh"]
    beat = by_kind["Deployment"]["grader-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"
    from infra.lanes import LANES

    workers = {name for name in by_kind["Deployment"] if name.startswith("grader-worker-")}
    assert workers == {f"grader-worker-{lane}" for lane in LANES}
    users = {"grader-worker-numeric", "grader-worker-code", "grader-worker-maintenance", "grader-release"}
    client = by_kind["ConfigMap"]["grader-sandbox-client"]["data"]
    for name, workload in {**by_kind["Deployment"], **by_kind["Job"]}.items():
        spec = workload["spec"]["template"]["spec"]
        assert not spec.get("initContainers"), name  # no sandbox beside a worker any more
        for container in spec["containers"]:  # none of them runs as root
            assert container["securityContext"]["runAsNonRoot"] is True, name
            sources = [source["configMapRef"]["name"] for source in container["envFrom"]]
            if name in users:
                assert "grader-sandbox-client" in sources, name
                mounts = {m["mountPath"] for m in container["volumeMounts"]}
                assert all(client[f"SANDBOX_TLS_{part}_FILE"].rsplit("/", 1)[0] in mounts
                           for part in ("CA", "CERT", "KEY")), name
            else:
                assert {"name": "SANDBOX_ENDPOINTS", "value": "none"} in container["env"], name


def test_the_kubernetes_sandbox_hosts_are_the_only_privileged_pods_and_listen_with_mutual_tls() -> None:
    from sandbox.__main__ import build_parser
    from sandbox.network import parse_endpoints

    by_kind: dict[str, dict[str, Any]] = {}
    for document in _manifests():
        by_kind.setdefault(document["kind"], {})[document["metadata"]["name"]] = document
    hosts = by_kind["StatefulSet"]["grader-sandbox"]
    server = hosts["spec"]["template"]["spec"]["containers"][0]
    args = build_parser().parse_args(server["command"][3:])
    assert args.listen == "0.0.0.0:7000" and args.tls_cert.endswith("server-$(POD_NAME).grader-sandbox.crt")
    assert server["readinessProbe"]["exec"]["command"][3] == "status"  # answers while every slot is busy
    endpoints = parse_endpoints(by_kind["ConfigMap"]["grader-sandbox-client"]["data"]["SANDBOX_ENDPOINTS"])
    names = [f"grader-sandbox-{i}.{hosts['spec']['serviceName']}" for i in range(hosts["spec"]["replicas"])]
    assert [(e.host, e.port) for e in endpoints] == [(name, 7000) for name in names]
    assert by_kind["Service"]["grader-sandbox"]["spec"]["clusterIP"] == "None"
    assert "grader-sandbox" in by_kind["PodDisruptionBudget"] and "grader-sandbox" in by_kind["NetworkPolicy"]
    privileged = [d["metadata"]["name"] for d in _manifests() if "template" in d.get("spec", {}) and any(
        c.get("securityContext", {}).get("capabilities", {}).get("add")
        for c in d["spec"]["template"]["spec"]["containers"])]
    assert privileged == ["grader-sandbox"]
