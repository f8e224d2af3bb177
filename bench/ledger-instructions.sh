#!/usr/bin/env bash
# Server work per ledger posting in CPU instructions, counted by valgrind's callgrind: the same
# count for the same code and inputs whatever else the machine runs, so two versions of the
# posting function can be compared on a busy machine where timings cannot (docs/benchmarks.md,
# "Ledger"). Not part of the test suite.
#
#   bash bench/ledger-instructions.sh [--upto N]... [--postings P]
#
# For each --upto N (default: every migration), it makes a scratch PostgreSQL cluster (initdb in a
# temporary directory, run as the postgres user, port 5499, removed at the end), applies
# migrations 1..N, seeds 1,000 accounts with deposits, and then runs a single-user backend under
# callgrind twice: 20 postings, and 20 + P postings (default 300), each a 0.01 transfer between
# two random accounts through ledger_post_legs, committed one by one (synchronous_commit off: the
# WAL flush is a wait, not work). The difference divided by P is the backend's instructions per
# posting: the function, its statements, the checks at COMMIT and the commit itself.
#
# Needs: root (to run the cluster as postgres), PostgreSQL 15 server binaries, valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
postings=300
uptos=()
while [ $# -gt 0 ]; do
  case "$1" in
    --upto) uptos+=("$2"); shift 2 ;;
    --postings) postings="$2"; shift 2 ;;
    *) echo "usage: $0 [--upto N]... [--postings P]" >&2; exit 2 ;;
  esac
done
migrations=$(ls migrations/*.sql | sort -t/ -k2 -n)
last=$(basename "$(echo "$migrations" | tail -n 1)" | cut -d_ -f1)
[ ${#uptos[@]} -eq 0 ] && uptos=("$last")
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }

work=$(mktemp -d /tmp/ledger-instructions.XXXXXX)
chown postgres "$work"
as_pg() { su postgres -s /bin/bash -c "$1"; }
cleanup() {
  as_pg "$pg_bin/pg_ctl -D $work/data stop -m fast >/dev/null 2>&1" || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "ledger instructions per posting: $(date -u +%FT%TZ), $(valgrind --version), $("$pg_bin/postgres" --version)"
as_pg "$pg_bin/initdb -D $work/data -A trust -U postgres --locale=C.UTF-8 >/dev/null"
for upto in "${uptos[@]}"; do
  db="upto_$upto"
  as_pg "$pg_bin/pg_ctl -D $work/data -o '-p 5499 -k $work' -l $work/log start >/dev/null"
  psql=(psql -h "$work" -p 5499 -U postgres -v ON_ERROR_STOP=1 -q)
  "${psql[@]}" -d postgres -c "CREATE DATABASE $db"
  for file in $migrations; do
    n=$(basename "$file" | cut -d_ -f1)
    [ "$n" -le "$upto" ] && "${psql[@]}" -d "$db" -1 -f "$file"
  done
  "${psql[@]}" -d "$db" <<'SQL'
-- Seed through the posting function (ledger_post_legs from migration 8 on, ledger_post before).
DO $$
BEGIN
  FOR i IN 0 .. 999 LOOP
    IF to_regproc('ledger_post_legs') IS NOT NULL THEN
      PERFORM ledger_post_legs('seed:' || i, 'DEPOSIT', 'bench', NULL, NULL, ARRAY['bench-s' || lpad(i::text, 5, '0'), 'system:world'],
                               ARRAY['AVAILABLE', 'AVAILABLE'], ARRAY['BRL', 'BRL'], ARRAY[10000000000, -10000000000]::bigint[]);
    ELSE
      PERFORM ledger_post('seed:' || i, 'DEPOSIT', 'bench', NULL, NULL, jsonb_build_array(
        jsonb_build_object('owner_id', 'bench-s' || lpad(i::text, 5, '0'), 'bucket', 'AVAILABLE', 'currency', 'BRL', 'amount_minor', 10000000000),
        jsonb_build_object('owner_id', 'system:world', 'bucket', 'AVAILABLE', 'currency', 'BRL', 'amount_minor', -10000000000)));
    END IF;
  END LOOP;
END $$;
-- From migration 12 on, a deposit's credit stays beside its row until folded: fold them, so the
-- postings below run as they do in steady state (rows funded, one credit in 32 folding).
DO $$ BEGIN
  IF to_regproc('ledger_fold_credits') IS NOT NULL THEN
    PERFORM ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts;
  END IF;
END $$;
ANALYZE;
CREATE PROCEDURE bench_postings(n integer) LANGUAGE plpgsql AS $$
DECLARE
  a integer;
  b integer;
BEGIN
  PERFORM setseed(0.42);
  FOR i IN 1 .. n LOOP
    a := floor(random() * 1000);
    b := floor(random() * 999);
    IF b >= a THEN b := b + 1; END IF;
    IF to_regproc('ledger_post_legs') IS NOT NULL THEN
      PERFORM ledger_post_legs(gen_random_uuid()::text, 'RECONCILIATION', 'bench', NULL, NULL,
        ARRAY['bench-s' || lpad(least(a, b)::text, 5, '0'), 'bench-s' || lpad(greatest(a, b)::text, 5, '0')],
        ARRAY['AVAILABLE', 'AVAILABLE'], ARRAY['BRL', 'BRL'],
        CASE WHEN a < b THEN ARRAY[-1, 1]::bigint[] ELSE ARRAY[1, -1]::bigint[] END);
    ELSE
      PERFORM ledger_post(gen_random_uuid()::text, 'RECONCILIATION', 'bench', NULL, NULL, jsonb_build_array(
        jsonb_build_object('owner_id', 'bench-s' || lpad(a::text, 5, '0'), 'bucket', 'AVAILABLE', 'currency', 'BRL', 'amount_minor', -1),
        jsonb_build_object('owner_id', 'bench-s' || lpad(b::text, 5, '0'), 'bucket', 'AVAILABLE', 'currency', 'BRL', 'amount_minor', 1)));
    END IF;
    COMMIT;
  END LOOP;
END $$;
SQL
  as_pg "$pg_bin/pg_ctl -D $work/data stop >/dev/null"
  count() {
    printf 'SET synchronous_commit = off\nCALL bench_postings(%s)\n' "$1" |
      as_pg "valgrind --tool=callgrind --callgrind-out-file=$work/callgrind.$db.$1 $pg_bin/postgres --single -D $work/data $db" 2>&1 |
      awk '/Collected/ { gsub(",", "", $4); print $4 }'
  }
  small=$(count 20)
  large=$(count $((postings + 20)))
  echo "migrations 1..$upto: $(( (large - small) / postings )) instructions per posting ($postings postings)"
done
