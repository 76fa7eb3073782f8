#!/usr/bin/env bash
# Alert rules in CI: `promtool check rules` (syntax, PromQL) and `promtool test rules` (one unit
# test per alert). Installs Debian's prometheus package when promtool is missing (~7 s).
# The manifests themselves are checked by Jest (k8s/manifests.spec.ts, k8s/metrics.spec.ts).
# Usage: bash k8s/ci-checks.sh   (from anywhere; .ci/run calls it)
set -euo pipefail
cd "$(dirname "$0")/monitoring"

if ! command -v promtool >/dev/null 2>&1; then
  echo "[k8s] promtool not found: installing Debian's prometheus package"
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

echo "[k8s] $(promtool --version 2>&1 | head -n1)"
promtool check rules rules/almanac.rules.yml
promtool test rules rules/almanac.rules.test.yml
promtool check config prometheus.local.yml

# The PrometheusRule must carry the rules promtool just tested (also asserted in Jest).
node sync-rules.js --check
echo "[k8s] alert rules: checked and unit-tested"
