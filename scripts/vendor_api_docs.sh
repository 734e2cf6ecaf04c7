#!/usr/bin/env bash
# Vendor Swagger UI (swagger-ui-dist from npm) into static/vendor/swagger-ui/ for the API docs page
# (/api/docs/). Only the prebuilt bundle, its stylesheet and its licence are copied; the files are
# committed, so nothing is fetched at run time. The page's own start-up code is static/js/api_docs.js
# (no inline script: the CSP forbids it).
# Usage: bash scripts/vendor_api_docs.sh   (needs npm; change VERSION and run again to update)
set -euo pipefail
VERSION="5.36.0"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/static/vendor/swagger-ui"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "swagger-ui-dist@$VERSION" >/dev/null
tar -xzf "swagger-ui-dist-$VERSION.tgz"
mkdir -p "$OUT"
cp package/swagger-ui-bundle.js package/swagger-ui.css "$OUT/"
{
  echo "swagger-ui-dist $VERSION, vendored by scripts/vendor_api_docs.sh (swagger-ui-bundle.js, swagger-ui.css)."
  echo
  cat package/LICENSE
  if [ -f package/NOTICE ]; then echo; cat package/NOTICE; fi
} > "$OUT/LICENSE.txt"
# The bundle ends with a source-map comment for a file not vendored: drop it (browsers would 404 on it).
sed -i '/^\/\/# sourceMappingURL=/d' "$OUT/swagger-ui-bundle.js"
sed -i 's#/\*\# sourceMappingURL=[^*]*\*/##' "$OUT/swagger-ui.css"
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
