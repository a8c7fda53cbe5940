import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import {
  type Answer,
  base,
  call,
  cpuSeconds,
  data,
  databaseCpu,
  env,
  memoryMb,
  metric,
  pidOf,
  provision,
  redisCli,
  redisPorts,
  STACK_DIR,
  stack,
  type Tenant
} from "./drill-stack.js"

const SECONDS = Number(process.env.DRILL_SECONDS ?? 90)
const CREATES = Number(process.env.DRILL_CREATES ?? 30)
const READS = Number(process.env.DRILL_READS ?? 30)
const LIMITED = Number(process.env.DRILL_LIMITED ?? 5)
const LIMIT = Number(process.env.DRILL_LIMIT ?? 120)
const WORKSPACES = Number(process.env.DRILL_WORKSPACES ?? 3)
const KILL_WINDOW_MS = Number(process.env.DRILL_KILL_WINDOW_MS ?? 5_000)
const DELIVERY_WAIT_MS = Number(process.env.DRILL_DELIVERY_WAIT_MS ?? 120_000)

let t0 = 0
const now = () => Date.now() - t0
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// --- Receivers --------------------------------------------------------------------------------

/** Event id -> times received; submission id -> its event ids; first arrival times. */
const received = new Map<string, number>()
const eventsBySubmission = new Map<string, Set<string>>()
const firstArrivals: Array<number> = []

const receiver = () =>
  new Promise<{ url: string; server: Server }>((resolve) => {
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        try {
          const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          const times = received.get(payload.id) ?? 0
          received.set(payload.id, times + 1)
          if (times === 0) firstArrivals.push(now())
          const submission = payload.data?.submission?.id
          if (typeof submission === "string")
            eventsBySubmission.set(
              submission,
              (eventsBySubmission.get(submission) ?? new Set()).add(payload.id)
            )
        } catch {}
        response.writeHead(204).end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, server })
    )
  })

// --- Load -------------------------------------------------------------------------------------

type Kind = "create" | "retry" | "read" | "limited"
interface Sample {
  readonly kind: Kind
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly path: string
  readonly error?: string | undefined
}
const samples: Array<Sample> = []
/** Idempotency key -> the submission its create acknowledged, and the tenant. */
const acknowledged = new Map<string, { submissionId: string; tenant: Tenant }>()
const attempted = new Map<string, Tenant>()
const pending = new Set<Promise<unknown>>()

const timed = async (
  kind: Kind,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  headers = {}
) => {
  const at = now()
  const started = performance.now()
  let answer: Answer = { status: 0, body: null }
  let error: string | undefined
  try {
    answer = await call(method, path, token, body, headers)
  } catch (cause) {
    error = String((cause as { cause?: unknown }).cause ?? cause)
  }
  samples.push({ kind, at, ms: performance.now() - started, status: answer.status, path, error })
  return answer
}

const track = (promise: Promise<unknown>) => {
  pending.add(promise)
  void promise.finally(() => pending.delete(promise))
}

const create = async (tenant: Tenant, n: number) => {
  const ref = `drill-${n}`
  attempted.set(ref, tenant)
  const send = (kind: Kind) =>
    timed(
      kind,
      "POST",
      `/v1/intake-bots/${tenant.botId}/submissions`,
      tenant.key,
      { data: { email: `person${n}@example.com`, ref } },
      { "idempotency-key": ref }
    )
  let answer = await send("create")
  if (answer.status === 0 || answer.status >= 500) {
    await sleep(1_000)
    answer = await send("retry")
  }
  if (answer.status === 201)
    acknowledged.set(ref, {
      submissionId: data<{ submission: { id: string } }>(answer, 201).submission.id,
      tenant
    })
}

/** Calls `fire(i)` `perSecond` times a second from `fromMs` to `toMs`, whatever the answers' times. */
const openLoop = async (
  perSecond: number,
  fromMs: number,
  toMs: number,
  fire: (i: number) => Promise<unknown>
) => {
  let sent = 0
  while (now() < toMs) {
    const due = Math.floor(((now() - fromMs) * perSecond) / 1000)
    while (sent < due) track(fire(sent++))
    await sleep(20)
  }
}

// --- Faults -----------------------------------------------------------------------------------

interface Fault {
  readonly name: string
  start: number
  end: number
  note: string
}
const faults: Array<Fault> = []
const fault = async (name: string, action: (f: Fault) => Promise<void>) => {
  const f: Fault = { name, start: now(), end: 0, note: "" }
  faults.push(f)
  try {
    await action(f)
  } catch (error) {
    f.note += ` FAILED: ${error instanceof Error ? error.message : String(error)}`
  }
  f.end = now()
  console.log(
    `  ${(f.start / 1000).toFixed(1)} s ${name}: ${((f.end - f.start) / 1000).toFixed(1)} s.${f.note}`
  )
}

/** The master and replica ports of the shard serving `key`. */
const shardOf = async (key: string) => {
  const slot = Number(await redisCli(redisPorts[0]!, "CLUSTER", "KEYSLOT", key))
  const lines = (await redisCli(redisPorts[0]!, "CLUSTER", "NODES"))
    .split("\n")
    .map((line) => line.split(" "))
  const portOf = (fields: ReadonlyArray<string>) => Number(/:(\d+)@/.exec(fields[1] ?? "")?.[1])
  const master = lines.find(
    (fields) =>
      fields[2]?.includes("master") &&
      fields.slice(8).some((range) => {
        const [from, to = from] = range.split("-").map(Number)
        return slot >= from! && slot <= to!
      })
  )
  const replica = lines.find((fields) => fields[3] === master?.[0] && !fields[2]?.includes("fail"))
  if (master === undefined || replica === undefined) throw new Error(`no shard for slot ${slot}`)
  return { master: portOf(master), replica: portOf(replica) }
}

const until = async (what: string, check: () => Promise<boolean>, withinMs = 30_000) => {
  const deadline = Date.now() + withinMs
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(100)
  }
}

interface SubmissionsPage {
  readonly submissions: ReadonlyArray<{ readonly id: string; readonly data: { readonly ref: string } }>
  readonly pagination: { readonly next_cursor: string | null }
}

// --- The drill --------------------------------------------------------------------------------

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const main = async () => {
  const receivers = await Promise.all([receiver(), receiver()])
  console.log(`drill on ${base} (haproxy), state in ${STACK_DIR}, pool mode ${env.STACK_POOL_MODE}`)
  const tenants = await Promise.all(
    Array.from({ length: WORKSPACES }, (_, i) => provision(1_000_000, receivers[i % receivers.length]!.url))
  )
  const limited = await provision(LIMIT)
  const windowKey = `intake:rl:{key:${limited.keyId}}`
  console.log(
    `${WORKSPACES} workspaces, ${CREATES} creates/s, ${READS} reads/s, ${LIMITED}/s on a key limited to ${LIMIT}/min, for ${SECONDS} s`
  )

  const watched = ["server-1", "server-3", "worker-2"]
  const cpuAtStart = Object.fromEntries(watched.map((name) => [name, cpuSeconds(pidOf(name))]))
  const databaseCpuAtStart = await databaseCpu()
  const deliveredByWorker2AtStart = await metric(
    `http://127.0.0.1:${env.WORKER_METRICS_PORT_2}/metrics`,
    "intake_webhook_deliveries_total",
    'outcome="succeeded"'
  )
  t0 = Date.now()
  const end = SECONDS * 1000
  const at = (fraction: number) => Math.round(end * fraction)

  const load = Promise.all([
    openLoop(CREATES, 0, end, (i) => create(tenants[i % tenants.length]!, i)),
    openLoop(READS, 0, end, (i) => {
      const tenant = tenants[i % tenants.length]!
      return i % 2 === 0
        ? timed("read", "GET", `/v1/intake-bots/${tenant.botId}/submissions?limit=10`, tenant.key)
        : timed("read", "GET", `/v1/intake-bots/${tenant.botId}`, tenant.key)
    }),
    (async () => {
      await sleep(at(0.4))
      await openLoop(LIMITED, at(0.4), at(0.9), () => timed("limited", "GET", "/v1/intake-bots", limited.key))
    })()
  ])

  const schedule = (async () => {
    await sleep(at(1 / 6) - now())
    await fault("server 2 killed (SIGKILL), started again after 10 s", async () => {
      await stack("kill", "server", "2")
      await sleep(10_000)
      await stack("start", "server", "2")
    })
    // Each fault at least 5 s after the previous one is over, so that "after" is measured.
    await sleep(Math.max(at(0.4), now() + 5_000) - now())
    await fault("worker 1 restarted (SIGTERM, then start)", async () => {
      await stack("stop", "worker", "1")
      await stack("start", "worker", "1")
    })
    await sleep(Math.max(at(0.6), now() + 5_000) - now())
    await fault("Redis master of the limited key's window failed over", async (f) => {
      const { master, replica } = await shardOf(windowKey)
      await redisCli(replica, "CLUSTER", "FAILOVER")
      const role = async (port: number) => (await redisCli(port, "ROLE")).split("\n")[0]
      await until("replica promoted", async () => (await role(replica)) === "master")
      await until("old master demoted", async () => (await role(master)) === "slave")
      f.note = ` ${master} -> ${replica}`
    })
  })()
  const loadStopped = load.then(() => now())
  await Promise.all([load, schedule])
  await Promise.all([...pending])
  const loadEnded = now()
  const loadStoppedAt = await loadStopped

  const cpu = Object.fromEntries(watched.map((name) => [name, cpuSeconds(pidOf(name)) - cpuAtStart[name]!]))
  const databaseCpuAtEnd = await databaseCpu()
  const pgCpu = databaseCpuAtEnd.postgres - databaseCpuAtStart.postgres
  const bouncerCpu = databaseCpuAtEnd.pgbouncer - databaseCpuAtStart.pgbouncer
  const memory = ["server-1", "server-2", "server-3", "worker-1", "worker-2"].map(
    (name) => `${name} ${memoryMb(pidOf(name), "VmRSS")} MB (peak ${memoryMb(pidOf(name), "VmHWM")})`
  )
  const deliveredByWorker2 =
    (await metric(
      `http://127.0.0.1:${env.WORKER_METRICS_PORT_2}/metrics`,
      "intake_webhook_deliveries_total",
      'outcome="succeeded"'
    )) - deliveredByWorker2AtStart

  // Deliveries: wait until each acknowledged create's event arrived.
  const waitStart = now()
  const undelivered = () =>
    [...acknowledged.values()].filter(({ submissionId }) => !eventsBySubmission.has(submissionId))
  while (undelivered().length > 0 && now() - waitStart < DELIVERY_WAIT_MS) await sleep(250)
  const lastDeliveryAfterLoad = (Math.max(...firstArrivals) - loadStoppedAt) / 1000

  // --- Figures ---
  const boundaries = [0, ...faults.flatMap((f) => [f.start, f.end]), loadEnded]
  const names = ["before", ...faults.flatMap((_, i) => [`during fault ${i + 1}`, `after fault ${i + 1}`])]
  console.log(
    "\nphase                 seconds  creates/s  reads/s  deliveries/s  create p50/p99 ms  5xx  no answer"
  )
  names.forEach((name, i) => {
    const [from, to] = [boundaries[i]!, boundaries[i + 1]!]
    const seconds = (to - from) / 1000
    const inPhase = samples.filter((s) => s.at >= from && s.at < to)
    const creates = inPhase.filter((s) => (s.kind === "create" || s.kind === "retry") && s.status === 201)
    const reads = inPhase.filter((s) => s.kind === "read" && s.status === 200)
    const deliveries = firstArrivals.filter((t) => t >= from && t < to)
    const ms = inPhase.filter((s) => s.kind === "create" && s.status === 201).map((s) => s.ms)
    console.log(
      [
        name.padEnd(21),
        seconds.toFixed(1).padStart(7),
        (creates.length / seconds).toFixed(1).padStart(10),
        (reads.length / seconds).toFixed(1).padStart(8),
        (deliveries.length / seconds).toFixed(1).padStart(13),
        `${percentile(ms, 50).toFixed(0)}/${percentile(ms, 99).toFixed(0)}`.padStart(18),
        String(inPhase.filter((s) => s.status >= 500).length).padStart(4),
        String(inPhase.filter((s) => s.status === 0).length).padStart(10)
      ].join(" ")
    )
  })
  for (const f of faults) console.log(`  fault: ${f.name} at ${(f.start / 1000).toFixed(1)} s${f.note}`)
  const served = samples.filter((s) => s.status > 0).length
  console.log(
    `\nCPU over the load (${(loadEnded / 1000).toFixed(0)} s), processes that ran throughout: ${watched
      .map(
        (name) =>
          `${name} ${cpu[name]!.toFixed(1)} s (${((100 * cpu[name]!) / (loadEnded / 1000)).toFixed(0)}%)`
      )
      .join(
        ", "
      )}; PostgreSQL (its backends alive at the end) ${pgCpu.toFixed(1)} s, PgBouncer ${bouncerCpu.toFixed(1)} s`
  )
  console.log(
    `answers served: ${served} (${(served / (loadEnded / 1000)).toFixed(1)}/s through haproxy); worker 2 delivered ${deliveredByWorker2} (${(deliveredByWorker2 / Math.max(cpu["worker-2"]!, 0.01)).toFixed(0)} per CPU second)`
  )
  console.log(`memory at the end: ${memory.join(", ")}`)

  // --- Checks ---
  const failures: Array<string> = []
  const stored = new Map<string, Array<string>>()
  for (const tenant of tenants) {
    let cursor: string | null = null
    do {
      const page: SubmissionsPage = data<SubmissionsPage>(
        await call(
          "GET",
          `/v1/intake-bots/${tenant.botId}/submissions?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
          tenant.key
        )
      )
      for (const submission of page.submissions)
        stored.set(submission.data.ref, [...(stored.get(submission.data.ref) ?? []), submission.id])
      cursor = page.pagination.next_cursor
    } while (cursor !== null)
  }
  const missing = [...acknowledged].filter(([ref]) => !stored.has(ref))
  const twice = [...stored].filter(([, ids]) => ids.length > 1)
  const wrongId = [...acknowledged].filter(([ref, { submissionId }]) => stored.get(ref)?.[0] !== submissionId)
  const unacknowledgedStored = [...stored.keys()].filter((ref) => !acknowledged.has(ref))
  console.log(
    `\ncreates: ${attempted.size} sent, ${acknowledged.size} acknowledged (201), ${stored.size} distinct stored; ` +
      `missing ${missing.length}, stored twice ${twice.length}, other id ${wrongId.length}, stored without an acknowledgement ${unacknowledgedStored.length}` +
      (unacknowledgedStored.length > 0 ? ` (${unacknowledgedStored.join(", ")})` : "")
  )
  if (missing.length > 0)
    failures.push(`acknowledged creates missing: ${missing.map(([ref]) => ref).join(", ")}`)
  if (twice.length > 0) failures.push(`creates stored twice: ${twice.map(([ref]) => ref).join(", ")}`)
  if (wrongId.length > 0)
    failures.push(`acknowledged ids not the stored ones: ${wrongId.map(([ref]) => ref).join(", ")}`)

  const duplicates = [...received.values()].filter((times) => times > 1).length
  const notDelivered = undelivered()
  console.log(
    `deliveries: ${received.size} events received for ${acknowledged.size} acknowledged creates, ${duplicates} received more than once (at least once), ` +
      `${notDelivered.length} never received; the last first arrival ${lastDeliveryAfterLoad.toFixed(1)} s after the load ended`
  )
  if (notDelivered.length > 0)
    failures.push(
      `${notDelivered.length} acknowledged creates never delivered: ${notDelivered
        .slice(0, 10)
        .map((x) => x.submissionId)
        .join(", ")}`
    )

  const limitedStatuses = samples.filter((s) => s.kind === "limited").map((s) => s.status)
  const admitted = limitedStatuses.filter((status) => status === 200).length
  const refused = limitedStatuses.filter((status) => status === 429).length
  console.log(
    `rate-limited key: ${limitedStatuses.length} requests, ${admitted} answered 200, ${refused} 429 (limit ${LIMIT}/min)`
  )
  if (limitedStatuses.length > LIMIT && admitted !== LIMIT)
    failures.push(`the limited key admitted ${admitted}, not ${LIMIT}`)
  if (admitted + refused !== limitedStatuses.length)
    failures.push(
      `the limited key got answers other than 200 and 429: ${limitedStatuses.filter((s) => s !== 200 && s !== 429).join(", ")}`
    )

  const kill = faults[0]!
  const bad = samples.filter((s) => s.status >= 500 || s.status === 0)
  // Cut by the kill: in flight at some time between the kill and KILL_WINDOW_MS later.
  const outside = bad.filter((s) => s.at + s.ms < kill.start || s.at > kill.start + KILL_WINDOW_MS)
  console.log(
    `5xx or no answer: ${bad.length} (${bad.map((s) => `${s.status} ${s.kind} sent at ${(s.at / 1000).toFixed(2)} s, ${s.ms.toFixed(0)} ms${s.error === undefined ? "" : ` (${s.error})`}`).join("; ") || "none"}); ${outside.length} outside the kill window`
  )
  if (outside.length > 0)
    failures.push(
      `${outside.length} 5xx (or no answer) not in flight within ${KILL_WINDOW_MS} ms after the kill`
    )
  for (const f of faults) {
    if (f.note.includes("FAILED")) failures.push(`fault "${f.name}":${f.note}`)
    if (f.end > loadStoppedAt)
      failures.push(`fault "${f.name}" was not over before the load ended: raise DRILL_SECONDS`)
  }

  for (const { server } of receivers) server.close()
  if (failures.length > 0) {
    console.log(`\nFAILED:\n- ${failures.join("\n- ")}`)
    process.exit(1)
  }
  console.log("\nall checks passed")
  process.exit(0)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
