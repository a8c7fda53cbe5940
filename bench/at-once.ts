/**
 * `bench/versus-checkout.sh --at-once`: two servers under the same load *at the same time*,
 * round after round, with each server's CPU per request from /proc. On a shared machine
 * whose speed drifts by ±10% from one run to the next, servers measured side by side in
 * the same seconds see the same machine: the per-round ratio of their CPU per request was
 * two to three times steadier than alternating runs (docs/performance.md, How a change is
 * judged). Throughput here is shared, so the figure is CPU per request, not req/s.
 *
 *   tsx bench/at-once.ts --endpoints bot,list,post --rounds 10 --seconds 8 \
 *     A=http://127.0.0.1:3001/v1,svc_live_...,bot_...,PID  B=http://127.0.0.1:3002/v1,...
 *
 * Every POST is a new submission: its own Idempotency-Key and email, as the shared harness
 * sends them. Loopback addresses only.
 */
import { randomBytes } from "node:crypto"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import { cpuMicros } from "./process-cpu.js"

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    endpoints: { type: "string", default: "bot,list,post" },
    rounds: { type: "string", default: "10" },
    seconds: { type: "string", default: "8" },
    connections: { type: "string", default: "25" },
    "warm-up": { type: "string", default: "4" }
  }
})

interface Target {
  readonly name: string
  readonly root: string
  readonly key: string
  readonly bot: string
  readonly pid: number
}

const targets: ReadonlyArray<Target> = positionals.map((spec) => {
  const [name, rest] = [spec.slice(0, spec.indexOf("=")), spec.slice(spec.indexOf("=") + 1)]
  const [root, key, bot, pid] = rest.split(",")
  if (!name || !root || !key || !bot || !pid) throw new Error(`not NAME=ROOT,KEY,BOT,PID: ${spec}`)
  const host = new URL(root).hostname
  if (host !== "127.0.0.1" && host !== "[::1]" && host !== "localhost")
    throw new Error(`loopback only: ${root}`)
  return { name, root, key, bot, pid: Number(pid) }
})
if (targets.length < 2) throw new Error("give two targets or more")

const paths = {
  bot: (t: Target) => `${t.root}/intake-bots/${t.bot}`,
  list: (t: Target) => `${t.root}/intake-bots/${t.bot}/submissions?limit=50`,
  post: (t: Target) => `${t.root}/intake-bots/${t.bot}/submissions`
} as const
type Endpoint = keyof typeof paths

const runTag = randomBytes(4).toString("hex")
let sequence = 0

const load = (target: Target, endpoint: Endpoint, seconds: number) => {
  const headers = { authorization: `Bearer ${target.key}` }
  const base = { url: paths[endpoint](target), connections: Number(options.connections), duration: seconds }
  if (endpoint !== "post") return autocannon({ ...base, headers })
  const tag = `${runTag}-${target.name}-${++sequence}`
  const postHeaders = { ...headers, "content-type": "application/json" }
  let n = 0
  return autocannon({
    ...base,
    requests: [
      {
        method: "POST",
        headers: postHeaders,
        setupRequest: (request) => {
          n += 1
          return {
            ...request,
            headers: { ...postHeaders, "idempotency-key": `at-once-${tag}-${n}` },
            body: JSON.stringify({
              data: { full_name: `Load ${n}`, email: `load-${tag}-${n}@example.com`, topic: "support" }
            })
          }
        }
      }
    ]
  })
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const first = targets[0]!
for (const endpoint of options.endpoints.split(",") as Array<Endpoint>) {
  if (!(endpoint in paths)) throw new Error(`unknown endpoint ${endpoint} (bot, list, post)`)
  console.log(`\n## ${endpoint}: ${targets.length} servers at once, ${options.connections} connections each`)
  await Promise.all(targets.map((target) => load(target, endpoint, Number(options["warm-up"]))))
  const perRequest = new Map(targets.map((target) => [target.name, [] as Array<number>]))
  for (let round = 1; round <= Number(options.rounds); round++) {
    const before = targets.map((target) => cpuMicros(target.pid))
    const results = await Promise.all(
      targets.map((target) => load(target, endpoint, Number(options.seconds)))
    )
    const cells = targets.map((target, index) => {
      const result = results[index]!
      const micros = (cpuMicros(target.pid) - before[index]!) / result.requests.total
      perRequest.get(target.name)!.push(micros)
      const failed = result.non2xx + result.errors
      return `${target.name} ${Math.round(result.requests.average)} req/s p99 ${result.latency.p99} ms CPU ${Math.round(micros)} us/req${failed > 0 ? ` (${failed} failed)` : ""}`
    })
    console.log(`   round ${round}: ${cells.join("   ")}`)
  }
  const baseline = perRequest.get(first.name)!
  for (const target of targets) {
    const own = perRequest.get(target.name)!
    const ratios = own.map((micros, round) => micros / baseline[round]!)
    console.log(
      `   ${target.name}: median CPU ${Math.round(median(own))} us/req; per-round CPU ratio to ${first.name}, median ${median(ratios).toFixed(3)}`
    )
  }
}
