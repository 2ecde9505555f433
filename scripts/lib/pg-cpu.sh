# shellcheck shell=bash
# A throwaway PostgreSQL cluster whose CPU can be read from /proc, for the scripts that
# measure PostgreSQL's own CPU per job (scripts/db-cpu, scripts/claim-cycle). Sourced;
# needs `fail MESSAGE` defined by the caller.
#
#   pg_cpu_start PORT NAME [postgresql.conf lines...]   # sets pgdir, pm, pgbin; stops on EXIT
#   pg_ticks                                           # PostgreSQL's CPU so far, clock ticks
#   autovacuum_idle                                    # waits until no autovacuum worker runs
#   each_table URL VACUUM|ANALYZE                      # every user table of the database
#   median <<<"1 3 2"                                  # the median of numbers (blank-separated)
#
# The cluster runs as the `postgres` user when we are root (as scripts/lib/postgres.sh),
# with fsync and synchronous_commit on, listening on 127.0.0.1 only.

pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
pg_run_as=()

pg_cpu_stop() {
  "${pg_run_as[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pgdir"
}

pg_cpu_start() {
  local port=$1 name=$2 line
  shift 2
  [[ -x $pgbin/initdb && -x $pgbin/pg_ctl ]] || fail "no initdb/pg_ctl in '$pgbin': install PostgreSQL or set PG_BIN"
  pgdir=$(mktemp -d "/tmp/sluice-$name.XXXXXX")
  if [[ $(id -u) == 0 ]]; then
    chown postgres "$pgdir"
    pg_run_as=(runuser -u postgres --)
  fi
  trap pg_cpu_stop EXIT
  "${pg_run_as[@]}" "$pgbin/initdb" -D "$pgdir/data" -U postgres -A trust >/dev/null
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "port = $port"
    echo "unix_socket_directories = '$pgdir'"
    echo "fsync = on"
    echo "synchronous_commit = on"
    for line in "$@"; do echo "$line"; done
  } >>"$pgdir/data/postgresql.conf"
  "${pg_run_as[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w start >/dev/null ||
    fail "the throwaway cluster did not start (port $port taken?); log: $(tail -n 5 "$pgdir/log")"
  pm=$(head -n 1 "$pgdir/data/postmaster.pid")
}

# PostgreSQL's CPU so far, in clock ticks: the postmaster's utime + stime + cutime + cstime
# (exited backends and autovacuum workers are reaped by it) plus utime + stime of each live
# child. Read the postmaster, its children, and the postmaster again; a child reaped in
# between would be counted twice or not at all, so such a read is retried.
pg_ticks() {
  local before after kids
  while :; do
    before=$(sed 's/^.*) //' "/proc/$pm/stat" | awk '{print $12 + $13, $14 + $15}')
    kids=$(pgrep -P "$pm" | while read -r pid; do sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null; done |
      awk '{s += $12 + $13} END {print s + 0}')
    after=$(sed 's/^.*) //' "/proc/$pm/stat" | awk '{print $12 + $13, $14 + $15}')
    [[ ${before#* } == "${after#* }" ]] && break
  done
  echo $((${after% *} + ${after#* } + kids))
}

# Waits until no autovacuum worker runs (read from /proc: no query of our own).
autovacuum_idle() {
  local i
  for i in $(seq 600); do
    pgrep -P "$pm" -f 'autovacuum worker' >/dev/null || return 0
    sleep 0.2
  done
  fail "an autovacuum worker ran for 2 minutes"
}

# each_table URL VACUUM|ANALYZE: every table of the queue's schema (not the catalogs).
each_table() {
  psql -qAtX -v ON_ERROR_STOP=1 "$1" \
    <<<"SELECT format('$2 %I.%I', schemaname, relname) FROM pg_stat_user_tables \gexec"
}

# The median of the numbers on stdin, separated by blanks or newlines.
median() { tr ' ' '\n' | awk NF | sort -g | awk '{v[NR]=$1} END {if (NR) print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
