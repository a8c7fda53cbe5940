#!/usr/bin/env bash
# `pnpm stack:local up|down|status`: the multi-process topology of docs/deploy.md on loopback,
# every file under one state folder ($STACK_DIR, /tmp/intake-stack by default):
#
#   haproxy (round robin, health check on /readyz) -> 3 servers (apps/server/dist/main.js)
#   2 workers (apps/worker/src/main.ts through tsx), each with WORKER_METRICS_PORT
#   PostgreSQL 15 (a private cluster, initdb) behind PgBouncer
#   a Redis Cluster of 6 redis-server nodes: 3 masters, 3 replicas
#
#   up                    start everything, print where it listens ($STACK_DIR/stack.env)
#   status                each process alive or not, /readyz through haproxy, the cluster's masters
#   down                  stop everything this script started (by pid/process group), delete $STACK_DIR
#   start|stop|kill server|worker N   one process (kill is SIGKILL): what bench/drill.ts uses
#   env                   print $STACK_DIR/stack.env (DATABASE_URL, ports, the admin token)
#
# Knobs: STACK_DIR; STACK_POOL_MODE (transaction by default: DATABASE_URL on PgBouncer with
# DATABASE_POOL_MODE=transaction and DATABASE_DIRECT_URL straight to PostgreSQL for LISTEN and
# migrations; `session` runs PgBouncer in session mode, which Intake supports without those
# two variables); STACK_HTTP_PORT (haproxy's port, a free one by default); STACK_SKIP_BUILD=1
# (use the existing apps/server/dist); STACK_SERVER_ENV / STACK_WORKER_ENV (extra
# "NAME=value NAME=value" for every server / worker). Ports other than STACK_HTTP_PORT are
# picked free on 127.0.0.1. As root, PostgreSQL and PgBouncer run as the 'postgres' user
# (both refuse root). haproxy and pgbouncer come from Debian; installed when missing.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
STACK_DIR=${STACK_DIR:-/tmp/intake-stack}
STACK_POOL_MODE=${STACK_POOL_MODE:-transaction}
SERVERS=3
WORKERS=2

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

need_debian() {
  local missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || [ -x "/usr/sbin/${pair%%:*}" ] || missing+=("${pair##*:}")
  done
  ((${#missing[@]} == 0)) && return 0
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Debian puts both in /usr/sbin, not on every user's PATH.
sbin() { command -v "$1" || echo "/usr/sbin/$1"; }

# Free TCP ports on 127.0.0.1 whose port + 10000 is free too (a Redis Cluster bus port).
free_ports() {
  node -e '
    const net = require("net")
    const free = (port) => new Promise((ok) => { const s = net.createServer(); s.once("error", () => ok(false)); s.listen(port, "127.0.0.1", () => s.close(() => ok(true))) })
    ;(async () => {
      const out = []
      while (out.length < Number(process.argv[1])) {
        const port = 20000 + Math.floor(Math.random() * 30000)
        if (!out.includes(port) && await free(port) && await free(port + 10000)) out.push(port)
      }
      console.log(out.join(" "))
    })()' "$1"
}

load_env() {
  [ -f "$STACK_DIR/stack.env" ] || { echo "no stack at $STACK_DIR (run: pnpm stack:local up)" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$STACK_DIR/stack.env"
}

wait_for() { # WHAT SECONDS COMMAND...
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq $((seconds * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "$what: not within ${seconds} s" >&2
  return 1
}

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Starts a command in its own process group (setsid), output to LOG, pid (= group id) to PIDFILE.
spawn_group() { # PIDFILE LOG command...
  local pidfile=$1 log=$2
  shift 2
  setsid "$@" >>"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

stop_group() { # PIDFILE [SIGNAL]
  local pidfile=$1 signal=${2:-TERM}
  [ -s "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "-$signal" -- "-$pid" 2>/dev/null || kill "-$signal" "$pid" 2>/dev/null || true
  # A server drains INTAKE_SHUTDOWN_DRAIN (5 s), then gives requests in flight up to 10 s.
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

server_port() { local var="SERVER_PORT_$1"; echo "${!var}"; }
worker_metrics_port() { local var="WORKER_METRICS_PORT_$1"; echo "${!var}"; }

common_env() {
  printf '%s\n' \
    "DATABASE_URL=$DATABASE_URL" \
    "REDIS_CLUSTER_NODES=$REDIS_CLUSTER_NODES" \
    "INTAKE_ADMIN_TOKEN=$INTAKE_ADMIN_TOKEN" \
    "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true" \
    "LOG_LEVEL=${LOG_LEVEL:-info}"
  if [ -n "${DATABASE_POOL_MODE:-}" ]; then
    printf '%s\n' "DATABASE_POOL_MODE=$DATABASE_POOL_MODE" "DATABASE_DIRECT_URL=$DATABASE_DIRECT_URL"
  fi
}

start_one() { # server|worker N
  load_env
  local kind=$1 n=$2 pidfile="$STACK_DIR/run/$1-$2.pid" log="$STACK_DIR/log/$1-$2.log"
  if alive "$pidfile"; then echo "$kind $n already runs (pid $(cat "$pidfile"))" >&2; return 0; fi
  mapfile -t vars < <(common_env)
  if [ "$kind" = server ]; then
    local port
    port=$(server_port "$n")
    # shellcheck disable=SC2086
    (cd "$here/apps/server" && spawn_group "$pidfile" "$log" env "${vars[@]}" PORT="$port" \
      INTAKE_TRUSTED_PROXIES=127.0.0.1 ${STACK_SERVER_ENV:-} node dist/main.js)
    wait_for "server $n's /readyz" 60 curl -fsS "http://127.0.0.1:$port/readyz" || { tail -n 20 "$log" >&2; return 1; }
  else
    # shellcheck disable=SC2086
    (cd "$here/apps/worker" && spawn_group "$pidfile" "$log" env "${vars[@]}" \
      WORKER_METRICS_PORT="$(worker_metrics_port "$n")" ${STACK_WORKER_ENV:-} node --import tsx src/main.ts)
    wait_for "worker $n's ready line" 60 grep -q "worker ready" "$log" || { tail -n 20 "$log" >&2; return 1; }
  fi
  echo "$kind $n: pid $(cat "$pidfile")" >&2
}

stop_one() { # server|worker N [SIGNAL]
  load_env
  stop_group "$STACK_DIR/run/$1-$2.pid" "${3:-TERM}"
}

up() {
  need_debian haproxy:haproxy pgbouncer:pgbouncer redis-server:redis-server redis-cli:redis-tools
  [ -x "$PGBIN/initdb" ] || { echo "no PostgreSQL binaries in $PGBIN" >&2; exit 1; }
  if [ -e "$STACK_DIR" ]; then echo "$STACK_DIR exists; run 'pnpm stack:local down' first" >&2; exit 1; fi
  case "$STACK_POOL_MODE" in transaction | session) ;; *) echo "STACK_POOL_MODE: transaction or session" >&2; exit 2 ;; esac
  if [ "${STACK_SKIP_BUILD:-}" != 1 ]; then (cd "$here" && pnpm --filter @intake/server build >/dev/null); fi
  mkdir -p "$STACK_DIR"/{run,log,redis}
  trap 'echo "up failed: logs in $STACK_DIR/log; pnpm stack:local down stops what started" >&2' ERR
  chmod 700 "$STACK_DIR"
  [ "$(id -u)" = 0 ] && chown postgres "$STACK_DIR" "$STACK_DIR/run" "$STACK_DIR/log"

  read -r -a ports <<<"$(free_ports 14)"
  local pg=${ports[0]} bouncer=${ports[1]}
  local redis=("${ports[@]:2:6}") servers=("${ports[@]:8:3}") metrics=("${ports[@]:11:2}")
  local http=${STACK_HTTP_PORT:-${ports[13]}}
  local token
  token=$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')
  local db=intake direct="postgres://postgres@127.0.0.1:$pg/intake" pooled="postgres://postgres@127.0.0.1:$bouncer/intake"
  {
    echo "# written by scripts/stack-local.sh up; secrets: INTAKE_ADMIN_TOKEN (this folder is 0700)"
    echo "STACK_POOL_MODE=$STACK_POOL_MODE"
    echo "HTTP_URL=http://127.0.0.1:$http"
    echo "HTTP_PORT=$http"
    echo "PG_PORT=$pg"
    echo "PGBOUNCER_PORT=$bouncer"
    echo "DATABASE_URL=$pooled"
    if [ "$STACK_POOL_MODE" = transaction ]; then
      echo "DATABASE_POOL_MODE=transaction"
      echo "DATABASE_DIRECT_URL=$direct"
    fi
    echo "DATABASE_ADMIN_URL=$direct"
    echo "REDIS_PORTS=\"${redis[*]}\""
    echo "REDIS_CLUSTER_NODES=$(printf '127.0.0.1:%s,' "${redis[@]}" | sed 's/,$//')"
    for i in 1 2 3; do echo "SERVER_PORT_$i=${servers[$((i - 1))]}"; done
    for i in 1 2; do echo "WORKER_METRICS_PORT_$i=${metrics[$((i - 1))]}"; done
    echo "INTAKE_ADMIN_TOKEN=$token"
  } >"$STACK_DIR/stack.env"
  chmod 600 "$STACK_DIR/stack.env"

  # PostgreSQL: a private cluster, loopback only, trust auth.
  as_pg "$PGBIN/initdb" -D "$STACK_DIR/pg" -A trust -U postgres -E UTF8 --no-locale >"$STACK_DIR/log/initdb.log"
  cat >>"$STACK_DIR/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pg
unix_socket_directories = '$STACK_DIR/run'
max_connections = 200
EOF
  as_pg "$PGBIN/pg_ctl" -D "$STACK_DIR/pg" -l "$STACK_DIR/log/postgres.log" -w start >/dev/null
  as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$pg" -U postgres "$db"
  # The two session settings Intake sends as startup parameters in session mode
  # (packages/postgres/src/pg-pool.ts), which PgBouncer 1.18 refuses: PgBouncer drops them
  # (ignore_startup_parameters) and the database gives every session the same values, in
  # both modes (docs/deploy-postgres.md sets them on the role).
  psql "$direct" -qc "ALTER DATABASE $db SET lock_timeout = '5s'" \
    -c "ALTER DATABASE $db SET idle_in_transaction_session_timeout = '3s'"

  # PgBouncer (docs/deploy.md, PgBouncer): session mode needs a server connection per client
  # connection (3 servers and 2 workers of 10 + 1 LISTEN each); transaction mode shares 20.
  local pool_size=20
  [ "$STACK_POOL_MODE" = session ] && pool_size=70
  echo '"postgres" ""' >"$STACK_DIR/pgbouncer.users"
  cat >"$STACK_DIR/pgbouncer.ini" <<EOF
[databases]
$db = host=127.0.0.1 port=$pg dbname=$db
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer
unix_socket_dir =
auth_type = trust
auth_file = $STACK_DIR/pgbouncer.users
pool_mode = $STACK_POOL_MODE
max_client_conn = 500
default_pool_size = $pool_size
server_reset_query = DISCARD ALL
ignore_startup_parameters = extra_float_digits,options,lock_timeout,idle_in_transaction_session_timeout
logfile = $STACK_DIR/log/pgbouncer.log
pidfile = $STACK_DIR/run/pgbouncer.pid
EOF
  [ "$(id -u)" = 0 ] && chown postgres "$STACK_DIR/pgbouncer.ini" "$STACK_DIR/pgbouncer.users"
  as_pg "$(sbin pgbouncer)" -d "$STACK_DIR/pgbouncer.ini"
  wait_for "pgbouncer" 20 psql_ok "$pooled"

  # Redis Cluster: 6 nodes, no persistence, 2 s node timeout (a failover takes seconds).
  for port in "${redis[@]}"; do
    mkdir -p "$STACK_DIR/redis/$port"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$STACK_DIR/redis/$port" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 2000 --save '' --appendonly no \
      --daemonize yes --pidfile "$STACK_DIR/run/redis-$port.pid" --logfile "$STACK_DIR/log/redis-$port.log"
  done
  for port in "${redis[@]}"; do wait_for "redis $port" 20 redis-cli -p "$port" ping; done
  redis-cli -p "${redis[0]}" --cluster create $(printf '127.0.0.1:%s ' "${redis[@]}") \
    --cluster-replicas 1 --cluster-yes >"$STACK_DIR/log/redis-cluster-create.log"
  for port in "${redis[@]}"; do wait_for "cluster_state:ok on $port" 30 cluster_ok "$port"; done

  # One server first: it applies the migrations; then the rest, then the workers.
  for i in $(seq $SERVERS); do start_one server "$i"; done
  for i in $(seq $WORKERS); do start_one worker "$i"; done

  # haproxy: round robin over the servers, out of rotation when /readyz fails twice.
  {
    cat <<EOF
global
  log stdout format raw local0 info
  maxconn 2000
defaults
  mode http
  log global
  option httplog
  option dontlog-normal
  option forwardfor
  option redispatch 1
  retries 2
  retry-on conn-failure
  timeout connect 2s
  timeout client 40s
  timeout server 40s
frontend intake
  bind 127.0.0.1:$http
  default_backend servers
backend servers
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 1s fall 2 rise 2
EOF
    for i in $(seq $SERVERS); do echo "  server s$i 127.0.0.1:${servers[$((i - 1))]} check"; done
  } >"$STACK_DIR/haproxy.cfg"
  spawn_group "$STACK_DIR/run/haproxy.pid" "$STACK_DIR/log/haproxy.log" "$(sbin haproxy)" -db -f "$STACK_DIR/haproxy.cfg"
  wait_for "haproxy" 20 curl -fsS "http://127.0.0.1:$http/readyz"
  echo "stack up in $STACK_DIR (pool mode $STACK_POOL_MODE): http://127.0.0.1:$http (haproxy); env in $STACK_DIR/stack.env" >&2
  grep -v INTAKE_ADMIN_TOKEN "$STACK_DIR/stack.env"
}

psql_ok() { psql "$1" -Atc 'select 1' | grep -q 1; }
cluster_ok() { redis-cli -p "$1" cluster info | grep -q cluster_state:ok; }

status() {
  load_env
  local failed=0
  for pidfile in "$STACK_DIR"/run/*.pid; do
    [ -e "$pidfile" ] || continue
    local name
    name=$(basename "$pidfile" .pid)
    if alive "$pidfile"; then echo "$name: up (pid $(cat "$pidfile"))"; else echo "$name: DOWN"; failed=1; fi
  done
  if [ -f "$STACK_DIR/pg/postmaster.pid" ] && kill -0 "$(head -1 "$STACK_DIR/pg/postmaster.pid")" 2>/dev/null; then
    echo "postgres: up (pid $(head -1 "$STACK_DIR/pg/postmaster.pid"))"
  else
    echo "postgres: DOWN"; failed=1
  fi
  echo "readyz through haproxy: $(curl -sS "$HTTP_URL/readyz" 2>&1 || true)"
  for port in $REDIS_PORTS; do
    echo "redis $port: $(redis-cli -p "$port" role 2>/dev/null | head -1 || echo down)"
  done
  return $failed
}

down() {
  [ -d "$STACK_DIR" ] || { echo "nothing at $STACK_DIR" >&2; return 0; }
  for pidfile in "$STACK_DIR"/run/haproxy.pid "$STACK_DIR"/run/server-*.pid "$STACK_DIR"/run/worker-*.pid; do
    [ -e "$pidfile" ] && stop_group "$pidfile"
  done
  for pidfile in "$STACK_DIR"/run/redis-*.pid "$STACK_DIR"/run/pgbouncer.pid; do
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -f "$STACK_DIR/pg/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$STACK_DIR/pg" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$STACK_DIR"
  echo "stopped and removed $STACK_DIR" >&2
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) load_env && grep -v '^#' "$STACK_DIR/stack.env" ;;
  start) start_one "${2:?server|worker}" "${3:?N}" ;;
  stop) stop_one "${2:?server|worker}" "${3:?N}" TERM ;;
  kill) stop_one "${2:?server|worker}" "${3:?N}" KILL ;;
  *) echo "usage: $0 up|down|status|env|start|stop|kill [server|worker N]" >&2; exit 2 ;;
esac
