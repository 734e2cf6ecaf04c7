#!/usr/bin/env bash
# `make run`: migrate, load the catalog, create demo accounts, start Redis (if none
# answers at REDIS_URL), the sandbox server, a Celery worker with beat, and serve http://127.0.0.1:8000.
# Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export DJANGO_SETTINGS_MODULE=config.settings
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

$PY -m celery -A config worker --beat -c "$(nproc)" --loglevel INFO \
    --schedule run/celerybeat-schedule >run/worker.log 2>&1 &
pids+=($!)

cat <<MSG

  Autograd grader on http://127.0.0.1:8000
  demo logins: student / student-demo    instructor / instructor-demo
  logs: run/worker.log run/sandbox.log

MSG
printf '%s\n' "${pids[@]}" >run/services.pids
$PY manage.py runserver 127.0.0.1:8000
