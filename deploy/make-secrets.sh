#!/bin/sh
# Random secrets for docker-compose.yml, one file each under ./secrets/ (mode 600). Run once; rerunning
# keeps existing files (rotating the database password also needs ALTER ROLE in PostgreSQL).
set -eu
cd "$(dirname "$0")/.."
umask 077
mkdir -p secrets
rand() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }
[ -s secrets/secret_key ] || python3 -c 'import secrets; print(secrets.token_urlsafe(50))' > secrets/secret_key
[ -s secrets/postgres_password ] || rand > secrets/postgres_password
[ -s secrets/redis_password ] || rand > secrets/redis_password
[ -s secrets/database_url ] || echo "postgres://grader:$(cat secrets/postgres_password)@postgres:5432/grader" > secrets/database_url
[ -s secrets/redis_url ] || echo "redis://:$(cat secrets/redis_password)@redis:6379/0" > secrets/redis_url
echo "secrets in $(pwd)/secrets: keep them out of version control and in your backups"
