# Sourced by bench/versus-checkout.sh and bench/versus-baseline-at-once.sh: a scratch folder
# ($work), the process groups of the servers they start ($groups, each one `setsid`), and a
# cleanup on exit that ends them and takes down the throwaway stack of ../shared/bench
# (local-stack.sh, on the STACK_DIR, PGPORT and REDIS_PORT the caller exported).
# Usage: . "$here/bench/stack-lib.sh" NAME   (NAME names the scratch folder)
groups=()
work=$(mktemp -d "/tmp/$1.XXXXXX")

cleanup() {
  for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  sleep 1
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  "$shared/local-stack.sh" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
listening_pid() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
# wait_health PORT LOG: until /healthz answers on PORT; else LOG's tail and a failure.
wait_health() {
  for _ in $(seq 1 240); do curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.5; done
  tail -n 30 "$2" >&2
  return 1
}
