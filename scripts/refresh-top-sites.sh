#!/bin/sh
# Refreshes allowlist/lists/top-sites.txt from the npm package top-sites
# (Moz Top 500, republished by Kiko Beats). Usage:
#   scripts/refresh-top-sites.sh [version]   (default: the latest)
# Needs npm and node. Review the diff before committing: a newly listed
# name is never stored as a domain indicator again.
set -eu
version=${1:-latest}
out=$(cd "$(dirname "$0")/.." && pwd)/allowlist/lists/top-sites.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "top-sites@$version" >/dev/null
tar xzf top-sites-*.tgz
v=$(node -p 'require("./package/package.json").version')
published=$(npm view "top-sites@$v" "time[$v]" 2>/dev/null | cut -c1-10)
{
	echo "# The most popular sites: a domain indicator equal to one of these names"
	echo "# (or to its www. form) is not stored. Names below them are not covered."
	echo "# Source: Moz Top 500 (https://moz.com/top500), as published in the npm"
	echo "# package top-sites $v ($published), https://github.com/Kikobeats/top-sites."
	echo "# example.* is left out: reserved for documentation, used by tests and demos."
	echo "# Refresh: scripts/refresh-top-sites.sh [version]"
	node -e '
for (const s of require("./package/top-sites.json")) {
  const name = (s.rootDomain || s.url || "").replace(/\/.*$/, "").toLowerCase();
  // example.* is reserved for documentation (RFC 2606); tests and demos use it.
  // The source shortens a few long names with "...": those are not names.
  if (!/^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$/.test(name)) continue;
  if (!/^(www\.)?example\.[a-z]+$/.test(name)) console.log(name);
}'
} >"$out"
echo "wrote $(grep -vc '^#' "$out") names of top-sites $v to $out"
