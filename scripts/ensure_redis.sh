#!/usr/bin/env bash
# Use the Redis at $1 if it answers; else start a local redis-server on its port.
set -euo pipefail
url="${1:-redis://127.0.0.1:6379/0}"
hostport="${url#redis://}"; hostport="${hostport%%/*}"; hostport="${hostport##*@}"
host="${hostport%%:*}"; port="${hostport##*:}"; [ "$port" = "$host" ] && port=6379
if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then exit 0; fi
if [ "$host" != "127.0.0.1" ] && [ "$host" != "localhost" ]; then
  echo "Redis at $url does not answer; start it or set REDIS_URL" >&2; exit 1
fi
if ! command -v redis-server >/dev/null; then
  echo "redis-server is not installed: run 'make setup' as root or apt-get install redis-server" >&2; exit 1
fi
echo "starting redis-server on port $port"
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
  --dir /tmp --logfile "$(pwd)/run/redis.log"
for _ in $(seq 50); do (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && exit 0; sleep 0.1; done
echo "redis-server did not start; see run/redis.log" >&2; exit 1
