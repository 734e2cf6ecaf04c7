#!/bin/sh
# The web container's start (docker-compose.yml): migrate, load the catalog, serve with gunicorn.
#
# load_assignments publishes what passes vetting; it exits 1 when some files are kept as drafts
# (normal: they are vetted and published from the staff pages) and 2 when some are refused
# (malformed, failing reference; one `error: file: field: problem` line each). Neither stops the
# web server: the lines stay in this log and the site serves the catalog as the database holds it.
# Only a failed migration does (the container restarts and tries again).
#   scripts/web_start.sh [CATALOG PATH...]   (default: the shipped catalog)
set -u
PYTHON="${PYTHON:-python}"
"$PYTHON" manage.py migrate --noinput || exit 1
status=0
"$PYTHON" manage.py load_assignments "$@" || status=$?
case "$status" in
  0) ;;
  1) echo "web: load_assignments exited 1: files kept as drafts (above) wait to be published from /staff/; starting anyway" >&2 ;;
  *) echo "web: load_assignments exited $status: files refused or not loaded (the error: lines above); starting with the catalog the database holds" >&2 ;;
esac
export WEB_WORKERS="${WEB_WORKERS:-4}"
exec "$PYTHON" -m gunicorn config.wsgi -c config/gunicorn.py -b "${BIND:-0.0.0.0:8000}"
