#!/usr/bin/env bash
# Installs the infrastructure the end-to-end tests start for real, from Debian's packages,
# when it is missing: Prometheus and its promtool (they scrape and check /metrics).
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
