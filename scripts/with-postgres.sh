#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster on loopback and
# exports its admin DSN as TIFEEDS_TEST_POSTGRES. Installs Debian's
# postgresql when it is missing (as root). Fails when the cluster cannot be
# started: the PostgreSQL tests must never be skipped silently.
# With TIFEEDS_PG_DIR set, the cluster lives in that directory and is kept
# when the command ends (make bench-scale's databases), stopped but not removed.
# TIFEEDS_PG_SHARED_BUFFERS sets the server's shared_buffers: a PostgreSQL
# size, or "quarter" for a quarter of the machine's memory (PostgreSQL's own
# starting point for a dedicated server); unset, the default 128MB, which
# the tests need and a database of millions of IoCs does not live with.
# A kept cluster (TIFEEDS_PG_DIR) also loads pg_prewarm, as README advises
# a deployment: its autoprewarm reads back at start the blocks the buffers
# held when it last stopped, so that a kept store's first pages do not each
# wait for the disk (0.4-2 s at 10,000,000 IoCs).
set -euo pipefail

pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

bindir=$(pg_bindir)
if [ -z "$bindir" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "with-postgres: PostgreSQL is not installed; run: apt-get install postgresql" >&2
    exit 1
  fi
  echo "with-postgres: installing postgresql from Debian's packages" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  bindir=$(pg_bindir)
fi

keep=${TIFEEDS_PG_DIR:-}
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  dir=$keep
else
  dir=$(mktemp -d /tmp/tifeeds-pg.XXXXXX)
fi
run_as=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root.
  chown postgres: "$dir"
  run_as=(runuser -u postgres --)
fi

stop() {
  if [ -n "$keep" ]; then
    # A clean stop: the kept cluster must come back without recovery.
    "${run_as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    return
  fi
  "${run_as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

if [ ! -d "$dir/data" ]; then
  "${run_as[@]}" "$bindir/initdb" -D "$dir/data" -U tifeeds --auth=trust -E UTF8 --no-sync >/dev/null
fi

server_opts=
case "${TIFEEDS_PG_SHARED_BUFFERS:-}" in
  "") ;;
  quarter) server_opts="-c shared_buffers=$(awk '/^MemTotal:/ {print int($2 / 4 / 1024)}' /proc/meminfo)MB" ;;
  *) server_opts="-c shared_buffers=$TIFEEDS_PG_SHARED_BUFFERS" ;;
esac
# A large shared_buffers in huge pages, as PostgreSQL's documentation
# advises a dedicated server: each backend maps the buffers it touches, and
# on 4 kB pages a new connection's first walk of 10,000 rows took 190-310
# ms on this kind of machine (2,900 page faults), 22-29 ms on 2 MB pages.
# As root the script reserves the pages the server asks for beyond those
# free (vm.nr_hugepages, kept afterwards); huge_pages=try starts the server
# on 4 kB pages when they cannot be had. TIFEEDS_PG_HUGE_PAGES=off keeps
# them off (to compare).
if [ -n "${TIFEEDS_PG_SHARED_BUFFERS:-}" ] && [ "${TIFEEDS_PG_HUGE_PAGES:-}" = off ]; then
  server_opts="$server_opts -c huge_pages=off"
elif [ -n "${TIFEEDS_PG_SHARED_BUFFERS:-}" ]; then
  # shellcheck disable=SC2086 # server_opts is a list of options
  want=$("${run_as[@]}" "$bindir/postgres" -D "$dir/data" -C shared_memory_size_in_huge_pages -c max_connections=300 $server_opts 2>/dev/null || echo 0)
  free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
  total=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
  if [ "$(id -u)" = 0 ] && [ "${want:-0}" -gt "${free:-0}" ]; then
    echo $((total + want - free)) >/proc/sys/vm/nr_hugepages 2>/dev/null || true
  fi
  server_opts="$server_opts -c huge_pages=try"
fi
if [ -n "${TIFEEDS_PG_DIR:-}" ] && [ -e "$(dirname "$bindir")/lib/pg_prewarm.so" ]; then
  server_opts="$server_opts -c shared_preload_libraries=pg_prewarm"
fi

started=
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  # fsync off: the cluster is thrown away; durability would only slow tests.
  if "${run_as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 $server_opts" \
      start >/dev/null; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  echo "with-postgres: unable to start PostgreSQL; server log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi

export TIFEEDS_TEST_POSTGRES="postgres://tifeeds@127.0.0.1:$port/postgres?sslmode=disable"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port${server_opts:+ ($server_opts)}" >&2
"$@"
