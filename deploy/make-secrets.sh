#!/bin/sh
# Random secrets for docker-compose.yml, one file each under ./secrets/ (mode 600, or 400 and owned by
# the image's user for the files web and workers read: see the end), and the deployment's
# sandbox CA with certificates for mutual TLS between workers and sandbox hosts (secrets/sandbox-tls/).
# Run once; rerunning keeps existing files (rotating the database password also needs ALTER ROLE in
# PostgreSQL). SANDBOX_HOSTS names the sandbox hosts as workers reach them (default "sandbox", the
# compose service; an IP address works too); a host added later gets its certificate on a rerun.
# SECRETS_DIR puts everything elsewhere (default ./secrets).
set -eu
cd "$(dirname "$0")/.."
umask 077
dir=${SECRETS_DIR:-secrets}
mkdir -p "$dir"
rand() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }
[ -s "$dir/secret_key" ] || python3 -c 'import secrets; print(secrets.token_urlsafe(50))' > "$dir/secret_key"
[ -s "$dir/postgres_password" ] || rand > "$dir/postgres_password"
[ -s "$dir/redis_password" ] || rand > "$dir/redis_password"
[ -s "$dir/database_url" ] || echo "postgres://grader:$(cat "$dir/postgres_password")@postgres:5432/grader" > "$dir/database_url"
[ -s "$dir/redis_url" ] || echo "redis://:$(cat "$dir/redis_password")@redis:6379/0" > "$dir/redis_url"

# Sandbox TLS: one CA per deployment (its key signs every certificate: keep it offline once done), a
# server certificate per sandbox host (its name must match the endpoint tls://NAME:PORT the workers
# use), and one client certificate the workers and web share. Any certificate signed by this CA may
# send jobs: never sign anything else with it. Certificates last 825 days; rerun after deleting one.
tls="$dir/sandbox-tls"
mkdir -p "$tls"
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
if [ ! -s "$tls/ca.crt" ]; then
    ec "$tls/ca.key"
    openssl req -x509 -new -key "$tls/ca.key" -sha256 -days 3650 -subj "/CN=grader sandbox CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$tls/ca.crt"
fi
sign() {  # name, subjectAltName, extendedKeyUsage
    [ -s "$tls/$1.crt" ] && return 0
    ec "$tls/$1.key"
    openssl req -new -key "$tls/$1.key" -subj "/CN=$1" -out "$tls/$1.csr"
    printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=critical,CA:FALSE\n' "$2" "$3" > "$tls/$1.ext"
    openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -sha256 \
        -days 825 -extfile "$tls/$1.ext" -out "$tls/$1.crt" 2>/dev/null
    rm -f "$tls/$1.csr" "$tls/$1.ext"
}
for host in ${SANDBOX_HOSTS:-sandbox}; do
    case $host in
        *[!0-9.:]*) san="DNS:$host" ;;
        *) san="IP:$host" ;;
    esac
    sign "server-$host" "$san" serverAuth
done
sign client "DNS:grader-client" clientAuth

# Compose mounts a file secret as the file is on this host, owner and mode included. Web and workers
# run as the image's user (uid 10001, the Dockerfile's useradd), so the files they read are made
# theirs, readable by nobody else; the ones only root-run containers read (PostgreSQL's and Redis's
# passwords, the sandbox server's key) stay root's. APP_UID: another uid, for an image built with one.
app_uid=${APP_UID:-10001}
unowned=""
for file in secret_key database_url redis_url sandbox-tls/ca.crt sandbox-tls/client.crt sandbox-tls/client.key; do
    chmod 400 "$dir/$file"
    chown "$app_uid:$app_uid" "$dir/$file" 2>/dev/null || unowned="$unowned $dir/$file"
done
if [ -n "$unowned" ]; then
    echo "could not give these to uid $app_uid (run this script as root, or: chown $app_uid:$app_uid$unowned);" \
         "the web and worker containers cannot read them until then" >&2
fi
echo "secrets in $(cd "$dir" && pwd): keep them out of version control and in your backups"
