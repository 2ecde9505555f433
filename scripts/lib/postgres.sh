# shellcheck shell=bash
# Finds a PostgreSQL server for Sluice's scripts and exports DATABASE_URL.
#
# Order: an already-set DATABASE_URL that answers; else 127.0.0.1:5432 (trust auth, user
# postgres); else a throwaway cluster started with initdb/pg_ctl in a temp dir on a private
# port (run as the `postgres` user when we are root), stopped when the calling script exits.
# Sourced by scripts/test and scripts/demo; defines functions only.

pg_bin_dir() {
  local d
  for d in "$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
    if [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}

pg_answers() { # url
  if command -v psql >/dev/null 2>&1; then
    psql "$1" -Atqc 'select 1' >/dev/null 2>&1
  else
    local bin; bin=$(pg_bin_dir) || return 1
    "$bin/pg_isready" -d "$1" >/dev/null 2>&1
  fi
}

install_postgres() {
  echo "postgres: no server binaries found; installing Debian's postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql postgresql-client >&2
}

start_throwaway_postgres() {
  local bin dir port run_as=()
  bin=$(pg_bin_dir) || { install_postgres; bin=$(pg_bin_dir); } || {
    echo "postgres: cannot find initdb/pg_ctl; install PostgreSQL (apt-get install postgresql) or set DATABASE_URL" >&2
    return 1
  }
  dir=$(mktemp -d /tmp/sluice-pg.XXXXXX)
  port=${SLUICE_PG_PORT:-54329}
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    run_as=(runuser -u postgres --)
  fi
  echo "postgres: starting a throwaway cluster in $dir on port $port" >&2
  "${run_as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >/dev/null
  "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" start >/dev/null
  SLUICE_THROWAWAY_PG="$dir"
  export SLUICE_THROWAWAY_PG SLUICE_PG_BIN="$bin"
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
  trap stop_throwaway_postgres EXIT
}

stop_throwaway_postgres() {
  [ -n "${SLUICE_THROWAWAY_PG:-}" ] || return 0
  local run_as=()
  [ "$(id -u)" = 0 ] && run_as=(runuser -u postgres --)
  "${run_as[@]}" "$SLUICE_PG_BIN/pg_ctl" -D "$SLUICE_THROWAWAY_PG/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$SLUICE_THROWAWAY_PG"
}

ensure_postgres() {
  if [ -n "${DATABASE_URL:-}" ]; then
    if pg_answers "$DATABASE_URL"; then echo "postgres: using DATABASE_URL" >&2; return 0; fi
    echo "postgres: DATABASE_URL does not answer; looking elsewhere" >&2
  fi
  local local_url="postgres://postgres@127.0.0.1:5432/postgres"
  if pg_answers "$local_url"; then
    export DATABASE_URL="$local_url"
    echo "postgres: using $local_url" >&2
    return 0
  fi
  start_throwaway_postgres
}
