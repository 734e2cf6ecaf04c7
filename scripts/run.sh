#!/usr/bin/env bash
# `make run`: migrate, load the catalog, create demo accounts, start the services
# and serve http://127.0.0.1:8000. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export DJANGO_SETTINGS_MODULE=config.settings
mkdir -p run

$PY manage.py migrate --noinput
$PY manage.py load_assignments
$PY manage.py create_user student --role student --password student-demo
$PY manage.py create_user instructor --role instructor --password instructor-demo

cat <<MSG

  Autograd grader on http://127.0.0.1:8000
  demo logins: student / student-demo    instructor / instructor-demo

MSG
exec $PY manage.py runserver 127.0.0.1:8000
