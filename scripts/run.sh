#!/usr/bin/env bash
# `make run`: a local development run of the production stack: migrate, load the catalog,
# create demo accounts, start Redis (if none answers at REDIS_URL), the sandbox server, one
# Celery pool per lane with beat, and gunicorn on http://127.0.0.1:${PORT:-8000} with DEBUG off.
# Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export DJANGO_SETTINGS_MODULE=config.settings
# Production defaults (DEBUG off), said explicitly, with what a local run over plain HTTP needs.
export DEBUG=0 SECURE_COOKIES=0
# The demo instructor may create courses (in production, operators name who may: GRADER_COURSE_CREATOR_USERS).
export GRADER_COURSE_CREATOR_USERS="${GRADER_COURSE_CREATOR_USERS:-instructor}"
[ -s run/secret_key ] 2>/dev/null || { mkdir -p run; (umask 077; .venv/bin/python -c \
  "import secrets; print(secrets.token_urlsafe(50))" >run/secret_key); }
export SECRET_KEY="${SECRET_KEY:-$(cat run/secret_key)}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
mkdir -p run
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f run/services.pids
}
trap cleanup EXIT INT TERM
# Services left behind by a previous run that was killed rather than interrupted.
if [ -f run/services.pids ]; then xargs -r kill <run/services.pids 2>/dev/null || true; sleep 1; fi

bash scripts/ensure_redis.sh "$REDIS_URL"
export SANDBOX_SOCKET="${SANDBOX_SOCKET:-$PWD/run/sandbox.sock}"
[ "$(id -u)" -eq 0 ] || export SANDBOX_ALLOW_INSECURE_DEV_BACKEND=1
pids+=("$(bash scripts/start_sandbox.sh "$SANDBOX_SOCKET")")

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput -v0
$PY manage.py load_assignments
$PY manage.py create_user student --role student --password student-demo
$PY manage.py create_user instructor --role instructor --password instructor-demo

# One pool per lane (grader/fairness.py): numbers and formulas; code (threads: a code task
# mostly waits for the sandbox); the sweeper with beat and the authoring jobs (2 processes, so
# a long import leaves one for the sweeper and previews). A flood in one never delays another.
queue="${CELERY_QUEUE:-grading}"
$PY -m celery -A config worker -Q "$queue" -c "$(nproc)" -n "numeric@%h" --loglevel INFO >run/worker.log 2>&1 &
pids+=($!)
$PY -m celery -A config worker -Q "$queue-code" -c "${CODE_WORKERS:-2}" --pool threads -n "code@%h" \
    --loglevel INFO >run/worker-code.log 2>&1 &
pids+=($!)
# The LMS lane (scores to platforms, roster syncs) shares the maintenance pool here; compose gives it its own.
$PY -m celery -A config worker -Q "$queue-maintenance,$queue-lms" -c 2 -n "maintenance@%h" --beat \
    --schedule run/celerybeat-schedule --loglevel INFO >run/worker-maintenance.log 2>&1 &
pids+=($!)

port="${PORT:-8000}"
cat <<MSG

  Autograd grader on http://127.0.0.1:$port  (gunicorn, DEBUG off)
  LOCAL DEVELOPMENT RUN: plain HTTP (secure cookies off), secret key in run/secret_key.
  demo logins: student / student-demo    instructor / instructor-demo
  logs: run/web.log run/worker*.log run/sandbox.log

MSG
# In the background and waited for, so that a plain `kill` of this script (SIGTERM), not only
# Ctrl-C, runs the trap at once and stops everything: bash runs traps only between commands.
.venv/bin/gunicorn config.wsgi -c config/gunicorn.py -b "127.0.0.1:$port" --access-logfile - \
    > >(tee -a run/web.log) 2>&1 &
pids+=($!)
printf '%s\n' "${pids[@]}" >run/services.pids
wait "${pids[-1]}"
