#!/usr/bin/env bash
# A/B of two Intake checkouts, side by side in one run: this one (A) against OTHER (B), each
# through `pnpm start` on its own database of one throwaway PostgreSQL + Redis, seeded with
# the same data, measured by the shared harness (../shared/bench: alternating rounds, paired
# ratio, each server's CPU per request). The way to judge a change to the request path:
#
#   git worktree add /tmp/intake-before main && (cd /tmp/intake-before && pnpm install)
#   bench/versus-checkout.sh /tmp/intake-before --endpoints post --rounds 4 --cooldown 0
#
# The harness favours the second server a little: run it again with the checkouts swapped
# (from the other checkout) before believing a difference under about 10%.
#
# With --at-once first, both servers take the same load at the same time instead, round
# after round (bench/at-once.ts: --endpoints, --rounds, --seconds, --connections,
# --warm-up): CPU per request side by side, steadier on a machine whose speed drifts.
#
# Knobs: VERSUS_A_ENV / VERSUS_B_ENV, extra variables for one side ("LOG_LEVEL=info" to
# measure the request log); VERSUS_A_SQL / VERSUS_B_SQL, SQL run on that side's database
# after its migrations and before seeding (an experiment: an index dropped, a trigger
# replaced); VERSUS_PGPORT (55480), VERSUS_REDIS_PORT (56480); SHARED_BENCH, the harness's
# folder (default ../shared/bench beside this repository).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${SHARED_BENCH:-$here/../shared/bench}
[ -x "$shared/run-compare.sh" ] || { echo "versus-checkout: no harness at $shared (set SHARED_BENCH)" >&2; exit 2; }
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { echo "usage: $0 OTHER_CHECKOUT [--at-once] [harness options]" >&2; exit 2; }
other=$(cd "$1" && pwd); shift
[ -d "$other/node_modules" ] || { echo "versus-checkout: run pnpm install in $other first" >&2; exit 2; }

export STACK_DIR=${STACK_DIR:-/tmp/intake-versus-checkout-stack}
export PGPORT=${VERSUS_PGPORT:-55480}
export REDIS_PORT=${VERSUS_REDIS_PORT:-56480}
export PGDATABASE=versus
pg="postgres://postgres@127.0.0.1:$PGPORT"
admin_token=$(node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))')
. "$here/bench/stack-lib.sh" intake-versus-checkout

"$shared/local-stack.sh" down >/dev/null 2>&1 || true
"$shared/local-stack.sh" up >&2

# side NAME DIR REDIS_DB EXTRA_ENV SQL: starts one checkout, seeds it, writes $work/NAME.env
side() {
  local name=$1 dir=$2 redis_db=$3 extra=$4 sql=$5 port
  port=$(free_port)
  createdb -h 127.0.0.1 -p "$PGPORT" -U postgres "intake_$name"
  # shellcheck disable=SC2086 # $extra is a list of NAME=value words
  (cd "$dir" && exec setsid env -u INTAKE_DATA_DIR PORT="$port" DATABASE_URL="$pg/intake_$name" \
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT/$redis_db" INTAKE_ADMIN_TOKEN="$admin_token" LOG_LEVEL=warn $extra \
    pnpm start) >"$work/$name.log" 2>&1 &
  groups+=($!)
  wait_health "$port" "$work/$name.log" || exit 1
  [ -z "$sql" ] || psql -h 127.0.0.1 -p "$PGPORT" -U postgres -d "intake_$name" -v ON_ERROR_STOP=1 -qc "$sql" >&2
  BASE_URL="http://127.0.0.1:$port" ADMIN_TOKEN=$admin_token node "$shared/seed-admin.mjs" >"$work/$name.env"
  { echo "PORT=$port"; echo "PID=$(listening_pid "$port")"; } >>"$work/$name.env"
}
side a "$here" 1 "${VERSUS_A_ENV:-}" "${VERSUS_A_SQL:-}"
side b "$other" 2 "${VERSUS_B_ENV:-}" "${VERSUS_B_SQL:-}"

get() { grep "^$2=" "$work/$1.env" | cut -d= -f2; }
echo "A = $here${VERSUS_A_ENV:+ ($VERSUS_A_ENV)}; B = $other${VERSUS_B_ENV:+ ($VERSUS_B_ENV)}"
target() { echo "$1=http://127.0.0.1:$(get "$2" PORT)/v1,$(get "$2" API_KEY),$(get "$2" BOT_ID),$(get "$2" PID)"; }
if [ "${1:-}" = "--at-once" ]; then
  shift
  "$here/node_modules/.bin/tsx" "$here/bench/at-once.ts" "$@" "$(target A a)" "$(target B b)"
  exit
fi
"$shared/run-compare.sh" \
  --a-name A --a-url "http://127.0.0.1:$(get a PORT)/v1" --a-key "$(get a API_KEY)" --a-bot "$(get a BOT_ID)" --a-pid "$(get a PID)" \
  --b-name B --b-url "http://127.0.0.1:$(get b PORT)/v1" --b-key "$(get b API_KEY)" --b-bot "$(get b BOT_ID)" --b-pid "$(get b PID)" \
  "$@"
