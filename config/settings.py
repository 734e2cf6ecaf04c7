"""One env-driven settings module. See README "Configuration" for every variable."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import envbool, envfile, envfloat, envint, envstr
from sandbox.network import EndpointError, TlsFiles, parse_endpoints

BASE_DIR = Path(__file__).resolve().parent.parent
DEBUG = envbool("DEBUG", False)  # off unless a local development run says so (scripts/run.sh --dev)
TESTING = "pytest" in sys.modules

# No built-in key: every process is given one (make run writes run/secret_key; the test
# session uses a throw-away key of its own, which conftest passes to the processes it starts).
SECRET_KEY = envstr("SECRET_KEY", "")
if not SECRET_KEY and TESTING:  # shared with the worker and web server processes the tests start
    SECRET_KEY = os.environ["SECRET_KEY"] = "test-session-only-" + os.urandom(16).hex()
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set (make run generates one in run/secret_key)")

if not DEBUG:  # behind a TLS-terminating proxy in production (see docker-compose.yml)
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", True)
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
    # Sent only on HTTPS responses (SecurityMiddleware), so plain-HTTP development is unaffected.
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
    if envbool("TRUST_X_FORWARDED_PROTO", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

ALLOWED_HOSTS = [h for h in envstr("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in envstr("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "axes",
    "csp",
    "assignments",
    "authoring",
    "grader",
    "courseops",
    "lti_tool",
    "lti",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "grader.request_guard.NulCharacterGuard",  # 400 for text PostgreSQL cannot store
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "grader.headers.ResponseHeadersMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "assignments.context_processors.staff_link",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        envstr("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"), conn_max_age=60,
        conn_health_checks=True,  # a kept connection is tested before reuse: a restart costs no request or task
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory, so the Celery worker and web server started by the tests share it (they are
    # handed its path); one per test session, so two sessions in one checkout never share a file.
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "test-output" / f"test-db-{os.getpid()}.sqlite3")}
    # WAL and immediate transactions: concurrent web requests and workers wait for the
    # write lock instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses locked-out logins before checking the password
    "django.contrib.auth.backends.ModelBackend",
]
# --- Login throttling (django-axes): every login path and API token auth ------------
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = envfloat("AXES_COOLOFF_HOURS", 0.25)  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_USERNAME_CALLABLE = "grader.request_guard.axes_username"  # its record holds 255 characters
AXES_IPWARE_PROXY_COUNT = envint("AXES_PROXY_COUNT", 0)  # set 1 behind one reverse proxy

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Password reset and invitation links (Django's tokens): valid once, for this long.
PASSWORD_RESET_TIMEOUT = envint("PASSWORD_RESET_DAYS", 7) * 24 * 3600

# --- Email: password resets and invitations ------------------------------------------
# SMTP once EMAIL_HOST is set; until then (make run, a developer's machine) every email is printed
# on the web server's console instead of being sent.
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_BACKEND = envstr("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                       else "django.core.mail.backends.console.EmailBackend")
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", False)  # TLS from the first byte (port 465)
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", not EMAIL_USE_SSL)  # STARTTLS (port 587)
EMAIL_PORT = envint("EMAIL_PORT", 465 if EMAIL_USE_SSL else 587)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10)  # seconds: a mail server that hangs does not hold a web thread long
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "Autograd grader <grader@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = envbool("WHITENOISE_USE_FINDERS", DEBUG)  # serve static/ without collectstatic

# --- Celery / Redis ---------------------------------------------------------
REDIS_URL = envstr("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Workers keep their database connection across tasks (Celery's fixup would open one per task,
# a new PostgreSQL backend each time); config/celery_app.py closes broken or old ones between tasks.
CELERY_DB_REUSE_MAX = envint("CELERY_DB_REUSE_MAX", 1000)
CELERY_TASK_DEFAULT_QUEUE = envstr("CELERY_QUEUE", "grading")
# A task still running past this is delivered again by the Redis transport: longer than the longest
# task's hard time limit (a regrade's 1800 s; tests/test_lanes.py checks every task). A killed worker's
# grading rows do not wait for it: the sweeper requeues them after GRADER_SWEEP_RUNNING_AFTER.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 1900)}

# --- Grading ----------------------------------------------------------------
# Dotted path of the backend that runs reference programs (see grading/reference.py).
# Paths under assignments.reference (before the grading adapter had a package of its own) still work.
GRADER_REFERENCE_RUNNER = re.sub(r"^assignments\.reference\.", "grading.reference.",
                                 envstr("GRADER_REFERENCE_RUNNER", "grading.reference.SandboxRunner"))
GRADER_REFERENCE_TIMEOUT = envfloat("GRADER_REFERENCE_TIMEOUT", 60.0)
GRADER_ANALYSIS_CACHE_SIZE = envint("GRADER_ANALYSIS_CACHE_SIZE", 128)  # parsed variant analyses kept per process
GRADER_DEMO_COURSE = envstr("GRADER_DEMO_COURSE", "autograd-101")
GRADER_CATALOG_DIR = BASE_DIR / "assignments" / "catalog"
# A queued row older than this is re-enqueued (lost broker message); a running row older
# than the second is taken back from a dead worker. Keep the latter above the task time limit.
GRADER_SWEEP_QUEUED_AFTER = envint("GRADER_SWEEP_QUEUED_AFTER", 30)
GRADER_SWEEP_RUNNING_AFTER = envint("GRADER_SWEEP_RUNNING_AFTER", 150)
GRADER_TASK_TIME_LIMIT = envint("GRADER_TASK_TIME_LIMIT", 120)
# Requests that may wait for grading at once per web process (the API's `?wait=`, the page's poll);
# each holds a server thread, so keep it below the threads (config/gunicorn.py sets it from them).
GRADER_WAIT_SLOTS = envint("GRADER_WAIT_SLOTS", 4)
GRADER_READY_CACHE_S = envfloat("GRADER_READY_CACHE_S", 2.0)  # /healthz/ready checks at most this often
# A measured shortcut past the framework, behind a seam (docs/decisions/0002-prepared-queries.md): the hot
# queries compiled once per process. Off: the ORM builds and compiles every query, same behaviour.
GRADER_PREPARED_QUERIES = envbool("GRADER_PREPARED_QUERIES", True)
GRADER_RATE_LIMIT = envint("GRADER_RATE_LIMIT", 60)  # submissions per student a minute, all assignments; 0: none
# Who may create courses at /staff/courses/new/: "staff" (site staff and superusers, holders of the
# assignments.add_course permission given in the admin, and the users named below) or "instructors"
# (those, plus every instructor of any course). LMS courses are made by launches, not by this page.
GRADER_COURSE_CREATORS = envstr("GRADER_COURSE_CREATORS", "staff")
GRADER_COURSE_CREATOR_USERS = tuple(name.strip() for name in envstr("GRADER_COURSE_CREATOR_USERS", "").split(",")
                                    if name.strip())
if GRADER_COURSE_CREATORS not in ("staff", "instructors"):
    raise ImproperlyConfigured("GRADER_COURSE_CREATORS must be 'staff' or 'instructors'")
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-submissions": {"task": "grader.sweep_submissions", "schedule": envfloat("GRADER_SWEEP_EVERY", 15.0),
                                "options": {"queue": f"{CELERY_TASK_DEFAULT_QUEUE}-maintenance"}},
}

# --- Sandbox (see sandbox/ and README "Sandbox") ---------------------------------
SANDBOX_SOCKET = envstr("SANDBOX_SOCKET", str(BASE_DIR / "run" / "sandbox.sock"))
# Sandbox hosts on the network (docs/operations.md): a list of unix:///path and tls://host:port; empty, the
# local SANDBOX_SOCKET alone; "none" on processes that run no sandbox job (web, beat, the LMS lane): /healthz
# leaves the sandbox out there. TLS endpoints need the deployment's CA and this side's certificate and key
# (deploy/make-secrets.sh), each as SANDBOX_TLS_CA_FILE=path or SANDBOX_TLS_CA=<PEM>.
SANDBOX_USED = envstr("SANDBOX_ENDPOINTS", "").strip().lower() != "none"
try:
    SANDBOX_ENDPOINTS = tuple(str(e) for e in parse_endpoints(envstr("SANDBOX_ENDPOINTS", "") if SANDBOX_USED else ""))
except EndpointError as _exc:
    raise ImproperlyConfigured(f"SANDBOX_ENDPOINTS: {_exc}") from None
_sandbox_tls = [envfile(f"SANDBOX_TLS_{part}") for part in ("CA", "CERT", "KEY")]
if any(_sandbox_tls) and not all(_sandbox_tls):
    raise ImproperlyConfigured("set all of SANDBOX_TLS_CA, SANDBOX_TLS_CERT and SANDBOX_TLS_KEY, or none")
SANDBOX_TLS = TlsFiles(*_sandbox_tls) if all(_sandbox_tls) else None  # type: ignore[arg-type]
if SANDBOX_TLS is None and any(e.startswith("tls://") for e in SANDBOX_ENDPOINTS):
    raise ImproperlyConfigured("tls:// sandbox endpoints need SANDBOX_TLS_CA, SANDBOX_TLS_CERT and SANDBOX_TLS_KEY")
SANDBOX_ALLOW_INSECURE_DEV_BACKEND = envbool("SANDBOX_ALLOW_INSECURE_DEV_BACKEND", False)
SANDBOX_LIMITS = {
    "wall_seconds": envfloat("SANDBOX_WALL_SECONDS", 5.0),
    "cpu_seconds": envfloat("SANDBOX_CPU_SECONDS", 3.0),
    "memory_mb": envint("SANDBOX_MEMORY_MB", 1024),
    "processes": envint("SANDBOX_PROCESSES", 64),
    "file_mb": envint("SANDBOX_FILE_MB", 16),
    "output_bytes": envint("SANDBOX_OUTPUT_BYTES", 1024 * 1024),
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "grader.tokens.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": ["grader.api.parsers.BoundedJSONParser"],  # depth, size, Unicode: 400s
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],  # no browsable forms (?format=api)
    "EXCEPTION_HANDLER": "grader.api.parsers.api_exception_handler",  # too big a body: a JSON 413
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Autograd grading API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- LTI 1.3 (see lti/ and README "LMS administrators") ----------------------------
# Launch state, nonces, JWKS and AGS tokens live in a cache every web process shares.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "lti": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": envstr("LTI_CACHE_URL", REDIS_URL),
            "KEY_PREFIX": envstr("LTI_CACHE_PREFIX", "lti")},
}
LTI_CLOCK_LEEWAY = envint("LTI_CLOCK_LEEWAY", 10)  # seconds of platform clock skew accepted, no more
LTI_HTTP_TIMEOUT = envfloat("LTI_HTTP_TIMEOUT", 10.0)  # every call to a platform (JWKS, token, AGS, NRPS)
LTI_JWKS_CACHE_SECONDS = envint("LTI_JWKS_CACHE_SECONDS", 600)
LTI_KEY_PUBLISH_SECONDS = envint("LTI_KEY_PUBLISH_SECONDS", 3600)  # a new key is published this long before use
LTI_SCORE_RETRIES = envint("LTI_SCORE_RETRIES", 6)
# A platform's key set is fetched at most once per this many seconds (a launch naming an unknown key
# may ask for a refetch; forged launches must not make the tool fetch on every request).
LTI_JWKS_REFETCH_SECONDS = envint("LTI_JWKS_REFETCH_SECONDS", 60)
# Calls to a platform go to https:// URLs only, unless DEBUG or this (a test LMS on loopback).
LTI_ALLOW_HTTP = envbool("LTI_ALLOW_HTTP", DEBUG)
LTI_REGISTRATION_URL_DAYS = envint("LTI_REGISTRATION_URL_DAYS", 7)  # how long an issued dynamic registration URL works
if not DEBUG and envbool("SECURE_COOKIES", True):  # LMS iframes are third-party: cookies need SameSite=None
    SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "None"

LOGGING = {  # LOG_FORMAT=json (default): one JSON object a line with submission_id (config/structured_logging.py)
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"submission": {"()": "config.structured_logging.SubmissionFilter"}},
    "formatters": {"json": {"()": "config.structured_logging.JsonFormatter"},
                   "text": {"format": "%(asctime)s %(levelname)s %(name)s [submission %(submission_id)s] %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["submission"],
                             "formatter": envstr("LOG_FORMAT", "json")}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING too

# --- Headers: CSP, framing, caching (see grader/headers.py) ------------------------
# Origins allowed to frame the pages (an LMS embedding assignments over LTI): a list of
# CSP sources, e.g. ["'self'", "https://lms.example.edu"]. The LTI app may extend it with
# its registered platforms' origins; "'self'" alone otherwise.
CSP_FRAME_ANCESTORS = [o for o in envstr("CSP_FRAME_ANCESTORS", "'self'").split(",") if o]
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],  # no inline scripts anywhere: JavaScript lives in static/js
        "style-src": ["'self'", "'unsafe-inline'"],  # KaTeX positions glyphs with style attributes
        "img-src": ["'self'", "data:"],  # instructor Markdown cannot load off-site images (tracking)
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        # frame-ancestors: CSP_FRAME_ANCESTORS (+ GRADER_FRAME_ANCESTORS_HOOK), set per response
    },
}
# A dotted path to a callable(request) -> list of origins allowed to frame this response too,
# by default the LTI app's registered platforms. Empty: CSP_FRAME_ANCESTORS only.
GRADER_FRAME_ANCESTORS_HOOK = envstr("GRADER_FRAME_ANCESTORS_HOOK", "lti.framing.platform_frame_origins")
# What grading asks of the apps built on it (grader/hooks.py): the LMS gradebook, the staff submission list.
GRADER_SCORES_CHANGED_HOOK = envstr("GRADER_SCORES_CHANGED_HOOK", "lti.scores.scores_changed")
GRADER_STAFF_SUBMISSIONS_HOOK = envstr("GRADER_STAFF_SUBMISSIONS_HOOK", "courseops.api.staff_submissions")
SILENCED_SYSTEM_CHECKS = ["csp.E001"]  # CSP_FRAME_ANCESTORS is ours (read by grader/headers.py), not django-csp 3's
X_FRAME_OPTIONS = "SAMEORIGIN"  # browsers that know CSP follow frame-ancestors instead
GRADER_PRIVATE_CACHE_PREFIXES = ("/api/", "/submissions/", "/assignments/", "/admin/", "/metrics")
METRICS_TOKEN = envstr("METRICS_TOKEN", "")
METRICS_ALLOWED_IPS = [ip for ip in envstr("METRICS_ALLOWED_IPS", "").split(",") if ip]
GRADER_TOKEN_DAYS = envint("GRADER_TOKEN_DAYS", 90)  # API tokens expire after this many days
# --- Fairness (grader/fairness.py) -------------------------------------------------
GRADER_CODE_IN_FLIGHT = envint("GRADER_CODE_IN_FLIGHT", 1)  # a student's code submissions on the code queue
GRADER_SANDBOX_BUDGET_SECONDS = envfloat("GRADER_SANDBOX_BUDGET_SECONDS", 120.0)  # per student per window; 0: none
GRADER_SANDBOX_BUDGET_WINDOW = envint("GRADER_SANDBOX_BUDGET_WINDOW", 600)  # seconds
# An instructor's previews, publishes and imports: how many may wait or run at once, and their sandbox
# time per window (0: no bound).
GRADER_AUTHORING_JOBS_PER_USER = envint("GRADER_AUTHORING_JOBS_PER_USER", 3)
GRADER_AUTHORING_BUDGET_SECONDS = envfloat("GRADER_AUTHORING_BUDGET_SECONDS", 900.0)
GRADER_AUTHORING_BUDGET_WINDOW = envint("GRADER_AUTHORING_BUDGET_WINDOW", 3600)  # seconds
CELERY_TASK_ROUTES = {"grader.sweep_submissions": {"queue": f"{CELERY_TASK_DEFAULT_QUEUE}-maintenance"}}
