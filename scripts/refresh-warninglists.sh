#!/bin/sh
# Refreshes allowlist/lists/misp/ from a checkout of MISP's warninglists
# (https://github.com/MISP/misp-warninglists, CC0 1.0). Usage:
#   scripts/refresh-warninglists.sh /path/to/misp-warninglists/lists
# Only the lists already shipped are copied (their names are the files of
# allowlist/lists/misp/); to ship another, add its name to the defaults of
# allowlist/builtin.go and create an empty allowlist/lists/misp/<name>.json.gz
# first. Each file is gzipped (-n: no name or time, so a refresh without a
# change is no diff). Note the commit and date in allowlist/lists/misp/SOURCE
# and the README, and review the diff: a newly listed drop entry is never
# stored again.
set -eu
src=${1:?usage: $0 /path/to/misp-warninglists/lists}
out=$(cd "$(dirname "$0")/.." && pwd)/allowlist/lists/misp
for f in "$out"/*.json.gz; do
	name=$(basename "$f" .json.gz)
	gzip -9n <"$src/$name/list.json" >"$f"
done
