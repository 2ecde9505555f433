# shellcheck shell=bash
# PgBouncer and pg_auto_failover for the production-PostgreSQL tests (tests/e2e/postgres/:
# `pgbouncer`, `failover`), installed from Debian's packages `pgbouncer` and
# `postgresql-<major>-auto-failover` (the major version of the server binaries found) when
# `pgbouncer` or `pg_autoctl` is missing.
#
# Like scripts/lib/browser.sh: apt-get update runs only when the install fails without
# it; sudo only when we are not root and it exists. A failed install does not stop the
# run: those tests then skip, each printing why.
#
# Sourced by scripts/test; defines functions only. Run it by hand with
#   bash -c 'source scripts/lib/postgres.sh && source scripts/lib/postgres-tools.sh && ensure_postgres_tools'

ensure_postgres_tools() {
  local packages=() major bin
  command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || packages+=(pgbouncer)
  if ! command -v pg_autoctl >/dev/null 2>&1; then
    bin=$(pg_bin_dir 2>/dev/null) && major=$("$bin/pg_ctl" --version | sed -E 's/.* ([0-9]+)(\.[0-9]+)*.*/\1/')
    packages+=("postgresql-${major:-15}-auto-failover")
  fi
  if [ ${#packages[@]} -eq 0 ]; then
    echo "postgres tools: using $(command -v pgbouncer || echo /usr/sbin/pgbouncer) and $(command -v pg_autoctl)" >&2
    return 0
  fi
  local root=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && root=sudo || {
      echo "postgres tools: ${packages[*]} missing and no root or sudo to install them; their tests skip" >&2
      return 0
    }
  fi
  command -v apt-get >/dev/null 2>&1 || {
    echo "postgres tools: ${packages[*]} missing and apt-get is not available; their tests skip" >&2
    return 0
  }
  local install=(apt-get install -y -qq --no-install-recommends "${packages[@]}")
  echo "postgres tools: installing Debian's ${packages[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # $root is empty or "sudo"
  if ! $root "${install[@]}" >&2; then
    echo "postgres tools: install failed; running apt-get update and retrying" >&2
    # shellcheck disable=SC2086
    $root apt-get update -qq >&2 && $root "${install[@]}" >&2 ||
      echo "postgres tools: installing ${packages[*]} failed; their tests skip" >&2
  fi
  return 0
}
