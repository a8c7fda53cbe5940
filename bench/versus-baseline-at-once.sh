#!/usr/bin/env bash
# This checkout (A, through `pnpm start`) and the shared harness's hand-written Fastify
# baseline (B) under the same load at the same time (bench/at-once.ts), each on its own
# database of one throwaway PostgreSQL + Redis, seeded as ../shared/bench/versus-baseline.sh
# seeds them. `versus-baseline.sh` alternates the two servers, and on a machine whose speed
# drifts within a run its POST figure moved with the drift; measured side by side, both
# see the same machine (docs/performance.md, "Round trips of a create"):
#
#   bench/versus-baseline-at-once.sh --endpoints post --rounds 6 --seconds 8
#
# The figure is CPU per request (throughput is shared). Knobs: AT_ONCE_PGPORT (55490),
# AT_ONCE_REDIS_PORT (56490); SHARED_BENCH, the harness's folder (default ../shared/bench
# beside this repository).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${SHARED_BENCH:-$here/../shared/bench}
[ -d "$shared/baseline-fastify" ] || { echo "versus-baseline-at-once: no harness at $shared (set SHARED_BENCH)" >&2; exit 2; }
[ -d "$shared/baseline-fastify/node_modules" ] || { echo "versus-baseline-at-once: run npm ci in $shared/baseline-fastify first" >&2; exit 2; }

export STACK_DIR=${STACK_DIR:-/tmp/intake-versus-baseline-at-once-stack}
export PGPORT=${AT_ONCE_PGPORT:-55490}
export REDIS_PORT=${AT_ONCE_REDIS_PORT:-56490}
export PGDATABASE=at_once
pg="postgres://postgres@127.0.0.1:$PGPORT"
admin_token=$(node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))')
. "$here/bench/stack-lib.sh" intake-versus-baseline-at-once

"$shared/local-stack.sh" down >/dev/null 2>&1 || true
"$shared/local-stack.sh" up >&2
createdb -h 127.0.0.1 -p "$PGPORT" -U postgres intake
createdb -h 127.0.0.1 -p "$PGPORT" -U postgres baseline

# The baseline, as versus-baseline.sh starts it: seeded by SQL, its rate limit lifted.
baseline_port=$(free_port)
(cd "$shared/baseline-fastify" && DATABASE_URL="$pg/baseline" REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" \
  node seed.js --reset >"$work/baseline.env")
(cd "$shared/baseline-fastify" && exec setsid env DATABASE_URL="$pg/baseline" REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" \
  PORT=$baseline_port RATE_LIMIT=1000000000 node server.js) >"$work/baseline.log" 2>&1 &
groups+=($!)
wait_health "$baseline_port" "$work/baseline.log"

# Intake: exactly as `pnpm start` runs it, seeded through its admin API.
intake_port=$(free_port)
(cd "$here" && exec setsid env -u INTAKE_DATA_DIR PORT=$intake_port DATABASE_URL="$pg/intake" \
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT/1" INTAKE_ADMIN_TOKEN="$admin_token" LOG_LEVEL=warn \
  pnpm start) >"$work/intake.log" 2>&1 &
groups+=($!)
wait_health "$intake_port" "$work/intake.log"
BASE_URL="http://127.0.0.1:$intake_port" ADMIN_TOKEN=$admin_token node "$shared/seed-admin.mjs" >"$work/intake.env"

get() { grep "^$2=" "$work/$1.env" | cut -d= -f2; }
echo "A = Intake ($here); B = the Fastify baseline ($shared/baseline-fastify)"
"$here/node_modules/.bin/tsx" "$here/bench/at-once.ts" "$@" \
  "A=http://127.0.0.1:$intake_port/v1,$(get intake API_KEY),$(get intake BOT_ID),$(listening_pid "$intake_port")" \
  "B=http://127.0.0.1:$baseline_port/v1,$(get baseline API_KEY),$(get baseline BOT_ID),$(listening_pid "$baseline_port")"
