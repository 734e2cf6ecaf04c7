#!/bin/sh
# A web replica's start (docker-compose.yml): serve with gunicorn, nothing else. Migrations and the
# catalog are the release step's (scripts/release.sh), run once per deployment, not per replica.
set -u
PYTHON="${PYTHON:-python}"
export WEB_WORKERS="${WEB_WORKERS:-4}"
exec "$PYTHON" -m gunicorn config.wsgi -c config/gunicorn.py -b "${BIND:-0.0.0.0:8000}"
