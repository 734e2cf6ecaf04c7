#!/usr/bin/env bash
# Installs the Debian packages the service needs when they are missing.
# Runs as root on CI and fresh machines; as a normal user it only reports.
set -euo pipefail
need=()
command -v dot >/dev/null || need+=(graphviz)
command -v redis-server >/dev/null || need+=(redis-server)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "setup: missing system packages: ${need[*]} (run as root or: sudo apt-get install ${need[*]})" >&2
fi
