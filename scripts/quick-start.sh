#!/usr/bin/env bash
# The README's quick start, server side: its server command (step 3) started at the repository root, probed on
# /healthz until it answers 200, then stopped with SIGTERM, which must exit 0. Prints the seconds to the first
# answer. PORT (default 8080) moves it off a port in use. Run after `npm ci`, on the node first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${PORT:-8080}"
log=$(mktemp)
started=$(date +%s.%N)
# The README's command, as written there (PORT added), in a process group of its own: the server is found in it. It is
# the SQLite quick start: a DATABASE_URL of the calling shell (CI's) is not part of it.
env -u DATABASE_URL PORT="$port" HOOKRELAY_CONFIG=examples/config.sample.json HOOKRELAY_ADMIN_TOKEN=change-me-admin-token \
  HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true setsid npm start >"$log" 2>&1 &
server=$!
answered=""
for _ in $(seq 1 600); do
  if ! kill -0 "$server" 2>/dev/null; then break; fi
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)" = 200 ]; then
    answered=$(date +%s.%N)
    break
  fi
  sleep 0.2
done
# SIGTERM to the hookrelay process itself, as the README says (npm run does not pass it on); npm then exits with it.
hookrelay=$(pgrep -g "$server" -f "^node .*dist/cli\.js" || true)
if [ -n "$hookrelay" ]; then kill -TERM $hookrelay; else kill -TERM "$server" 2>/dev/null || true; fi
status=0
wait "$server" || status=$?
if [ -z "$answered" ] || [ "$status" != 0 ]; then
  cat "$log" >&2
  echo "quick start on node $(node --version): /healthz $([ -n "$answered" ] && echo answered 200 || echo never answered 200), exit $status" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
echo "quick start on node $(node --version): /healthz answered 200 after $(echo "$answered - $started" | bc) s, stopped with exit 0"
