#!/usr/bin/env bash
# `make test`: the whole suite (unit, integration against real services, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
export DJANGO_SETTINGS_MODULE=config.settings
# A test run, said explicitly: production defaults (DEBUG off) and a throw-away key of its own.
export DEBUG=0
export SECRET_KEY="${SECRET_KEY:-test-run-only-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(16))')}"
mkdir -p test-output run
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
bash scripts/ensure_redis.sh "$REDIS_URL"
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python -m pytest "$@"
