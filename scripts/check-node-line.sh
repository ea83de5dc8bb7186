#!/usr/bin/env bash
# `scripts/check-node-line.sh <major>`: the README's quick start (scripts/quick-start.sh) and the package tests
# (test/package: install, configuration, compose; the image's steps run on the image's Node line, in the suite) on
# another Node line, in a copy of the checkout whose better-sqlite3 is built for that Node; the checkout itself, and
# its build for the Node of the suite, stay as they are. The native build is kept under ~/.cache/hookrelay between runs. Run after `npm ci`.
set -euo pipefail
major="${1:?usage: scripts/check-node-line.sh <major>}"
checkout="$(cd "$(dirname "$0")/.." && pwd)"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
tar -C "$checkout" --exclude=./.git --exclude=./data --exclude=./dist --exclude=./console/dist --exclude=./test-output \
  --exclude=./.vitest --exclude=./node_modules/.vite --exclude=./node_modules/.vitest -cf - . | tar -C "$tree" -xf -
cd "$tree"
. scripts/use-node.sh "$major"
echo "node $(node --version) in a copy of the checkout"

# better-sqlite3 for this Node's ABI: from the cache, else built (install script: a prebuilt binary, else compiled
# against npm_config_nodedir's headers) and cached.
sqlite_version=$(node -p 'require("./node_modules/better-sqlite3/package.json").version')
cached="${HOME:-/root}/.cache/hookrelay/better-sqlite3/$sqlite_version-node-v$(node -p process.versions.modules)-$(node -p 'process.platform + "-" + process.arch')"
release=node_modules/better-sqlite3/build/Release
if [ -f "$cached/better_sqlite3.node" ]; then
  rm -rf node_modules/better-sqlite3/build
  mkdir -p "$release"
  cp "$cached/better_sqlite3.node" "$release/"
else
  npm rebuild better-sqlite3
  mkdir -p "$cached"
  cp "$release/better_sqlite3.node" "$cached/"
fi
node -e 'const Database = require("better-sqlite3"); new Database(":memory:").close()'

PORT="${PORT:-18080}" scripts/quick-start.sh
npx vitest run test/package/Install.test.ts test/package/Configuration.test.ts test/package/Compose.test.ts
