#!/usr/bin/env bash
# Installs the infrastructure the end-to-end tests start for real, from Debian's packages,
# when it is missing: Prometheus and its promtool (they scrape and check /metrics),
# redis-server (the state replicas share), HAProxy (in front of them) and Chromium (the
# dashboard's tests drive it headless).
set -euo pipefail
missing=()
command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v haproxy >/dev/null || missing+=(haproxy)
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
