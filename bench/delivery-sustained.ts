/**
 * `pnpm bench:delivery --sustained`: creates at a fixed rate, open loop, through the HTTP API
 * of a server run as `pnpm start` runs it (compiled, delivering webhooks in its own process),
 * on a fresh database made on DATABASE_URL's server (dropped after). BENCH_SUSTAINED_WORKSPACES
 * (20) workspaces of BENCH_SUSTAINED_ENDPOINTS (5) endpoints each, every endpoint subscribed to
 * BENCH_SUSTAINED_EVENTS (`submission.completed,contact.created`: a create raises both, so
 * each create is that many deliveries per endpoint of its workspace); the creates go round
 * the workspaces at BENCH_SUSTAINED_RATE (200) a second for BENCH_SUSTAINED_SECONDS (30),
 * after a warm-up of BENCH_SUSTAINED_WARMUP (5) seconds at the same rate that is not
 * measured. REDIS_URL, when set, is passed to the server; BENCH_WORKERS (0) adds worker
 * processes (apps/worker) beside the server's own dispatcher. BENCH_CPU_PROF=DIR writes a V8
 * CPU profile of the server to DIR when it stops.
 *
 * Prints the creates answered, the deliveries expected and received (and any second one of
 * the same endpoint and event), create-to-receipt latency (the create's 201 to the arrival
 * of each delivery it caused, same machine, same clock), deliveries per second, and CPU per
 * delivery of the server, the workers and PostgreSQL's backends (the receiver and the load
 * are processes of their own and not counted). docs/webhooks.md, "How the engine sends",
 * has the figures and reads them.
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { createServer } from "node:net"
import { join } from "node:path"
import { withDatabase } from "@intake/postgres/testing"
import { cpuMicros } from "./process-cpu.js"

const RATE = Number(process.env.BENCH_SUSTAINED_RATE ?? 200)
const SECONDS = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 30)
const WARMUP = Number(process.env.BENCH_SUSTAINED_WARMUP ?? 5)
const WORKSPACES = Number(process.env.BENCH_SUSTAINED_WORKSPACES ?? 20)
const ENDPOINTS = Number(process.env.BENCH_SUSTAINED_ENDPOINTS ?? 5)
const EVENTS = (process.env.BENCH_SUSTAINED_EVENTS ?? "submission.completed,contact.created").split(",")
const WORKERS = Number(process.env.BENCH_WORKERS ?? 0)
/** How long to wait for the last deliveries after the last create. */
const DRAIN_MS = 60_000
const MAX_IN_FLIGHT = 512

const here = import.meta.dirname
const root = join(here, "..")
const SCOPES = ["read:intake-bots", "write:intake-bots", "read:submissions", "manage:webhooks"]
const SCHEMA = [
  { name: "full_name", label: "Full name", type: "text", required: true },
  { name: "email", label: "Email", type: "email", required: true },
  { name: "notes", label: "Notes", type: "long_text", required: false }
]

const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT })

interface Answer {
  readonly status: number
  readonly at: number
  readonly text: string
}

const call = (url: string, method: string, headers: Record<string, string>, body?: unknown) =>
  new Promise<Answer>((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const request = http.request(
      url,
      {
        method,
        agent,
        headers: {
          ...headers,
          ...(data === undefined
            ? {}
            : { "content-type": "application/json", "content-length": String(Buffer.byteLength(data)) })
        }
      },
      (response) => {
        const at = Date.now()
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, at, text: Buffer.concat(chunks).toString("utf8") })
        )
        response.on("error", reject)
      }
    )
    request.setTimeout(30_000, () => request.destroy(new Error("no answer in 30 s")))
    request.on("error", reject)
    request.end(data)
  })

/** The `data.<field>` of an answer with the expected status, or a thrown error that says what came. */
const expectData = (answer: Answer, status: number, field: string) => {
  if (answer.status !== status && !(status === 201 && answer.status === 200))
    throw new Error(`answered ${answer.status}: ${answer.text.slice(0, 300)}`)
  return JSON.parse(answer.text).data[field]
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })

const psql = (url: string, sql: string) =>
  execFileSync("psql", [url, "-Atqc", sql], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.trim() !== "")

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

const nextMessage = <T>(child: ChildProcess, type: string) =>
  new Promise<T>((resolve) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return
      child.off("message", onMessage)
      resolve(message as T)
    }
    child.on("message", onMessage)
  })

export const runSustained = async () => {
  const serverUrl = process.env.DATABASE_URL
  if (serverUrl === undefined) throw new Error("--sustained needs DATABASE_URL (a PostgreSQL server)")
  const name = `bench_${randomBytes(6).toString("hex")}`
  psql(serverUrl, `CREATE DATABASE ${name}`)
  const databaseUrl = withDatabase(serverUrl, name)
  const children: Array<ChildProcess> = []
  try {
    const receiver = fork(join(here, "sustained-receiver.mjs"), [], { stdio: "inherit" })
    children.push(receiver)
    const { port: receiverPort } = await nextMessage<{ port: number }>(receiver, "listening")

    execFileSync("node", [join(root, "apps/server/build.mjs")], { stdio: "inherit" })
    const port = await freePort()
    const adminToken = randomBytes(16).toString("hex")
    const env = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      INTAKE_ADMIN_TOKEN: adminToken,
      LOG_LEVEL: "warn",
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true"
    }
    // BENCH_CPU_PROF=DIR: a V8 CPU profile of the server, written to DIR when it exits.
    const profile =
      process.env.BENCH_CPU_PROF === undefined
        ? []
        : ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    const server = spawn("node", [...profile, join(root, "apps/server/dist/main.js")], {
      env: { ...env, PORT: String(port) },
      stdio: ["ignore", "inherit", "inherit"]
    })
    children.push(server)
    const base = `http://127.0.0.1:${port}`
    for (let tries = 0; ; tries++) {
      const healthy = await call(`${base}/healthz`, "GET", {}).then(
        (answer) => answer.status === 200,
        () => false
      )
      if (healthy) break
      if (tries > 240) throw new Error("the server did not answer /healthz in 60 s")
      await sleep(250)
    }
    const workers = Array.from({ length: WORKERS }, () =>
      spawn("node", ["--import", "tsx", join(root, "apps/worker/src/main.ts")], {
        env,
        stdio: ["ignore", "inherit", "inherit"]
      })
    )
    children.push(...workers)

    // Workspaces, keys, bots and endpoints, through the admin API and /v1 as an operator would.
    const admin = { authorization: `Bearer ${adminToken}` }
    const targets: Array<{ key: string; bot: string }> = []
    for (let w = 0; w < WORKSPACES; w++) {
      const workspace = expectData(
        await call(`${base}/admin/workspaces`, "POST", admin, {
          name: `Bench ${w}`,
          plan: "business",
          monthly_submission_quota: 1_000_000_000
        }),
        201,
        "workspace"
      )
      expectData(
        await call(`${base}/admin/workspaces/${workspace.id}`, "PATCH", admin, {
          rate_limit_per_minute: 1_000_000_000
        }),
        200,
        "workspace"
      )
      const key = expectData(
        await call(`${base}/admin/workspaces/${workspace.id}/api-keys`, "POST", admin, { scopes: SCOPES }),
        201,
        "api_key"
      ).key as string
      const bot = expectData(
        await call(`${base}/admin/workspaces/${workspace.id}/intake-bots`, "POST", admin, {
          name: "Contact form",
          schema: SCHEMA
        }),
        201,
        "intake_bot"
      ).id as string
      for (let e = 0; e < ENDPOINTS; e++)
        expectData(
          await call(
            `${base}/v1/webhooks`,
            "POST",
            { authorization: `Bearer ${key}` },
            { url: `http://127.0.0.1:${receiverPort}/hook/${w}/${e}`, events: EVENTS }
          ),
          201,
          "webhook"
        )
      targets.push({ key, bot })
    }

    let sequence = 0
    /** Open loop: create i leaves at t0 + i / rate (later only while MAX_IN_FLIGHT are outstanding). */
    const drive = async (seconds: number) => {
      const count = Math.max(1, Math.round(RATE * seconds))
      const created = new Map<string, number>()
      const statuses = new Map<number, number>()
      let errors = 0
      let lateMs = 0
      const inFlight = new Set<Promise<void>>()
      const started = Date.now()
      for (let i = 0; i < count; i++) {
        const due = started + (i * 1000) / RATE
        await sleep(due - Date.now())
        while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight)
        lateMs = Math.max(lateMs, Date.now() - due)
        const n = sequence++
        const target = targets[n % targets.length]!
        const sent: Promise<void> = call(
          `${base}/v1/intake-bots/${target.bot}/submissions`,
          "POST",
          { authorization: `Bearer ${target.key}` },
          { data: { full_name: `Person ${n}`, email: `person-${n}@example.com` }, status: "COMPLETED" }
        )
          .then((answer) => {
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
            if (answer.status === 201) created.set(JSON.parse(answer.text).data.submission.id, answer.at)
          })
          .catch(() => {
            errors++
          })
          .finally(() => inFlight.delete(sent))
        inFlight.add(sent)
      }
      await Promise.all(inFlight)
      const lastCreate = Date.now()
      const expected = created.size * ENDPOINTS * EVENTS.length
      let arrived = { received: 0, duplicates: 0 }
      while (arrived.received < expected && Date.now() - lastCreate < DRAIN_MS) {
        await sleep(50)
        const reading = nextMessage<{ received: number; duplicates: number }>(receiver, "received")
        receiver.send({ type: "read" })
        arrived = await reading
      }
      const reading = nextMessage<{ arrivals: Array<[string, Array<number>]> }>(receiver, "arrivals")
      receiver.send({ type: "arrivals" })
      const { arrivals } = await reading
      const latencies: Array<number> = []
      let lastArrival = started
      for (const [submission, times] of arrivals) {
        const at = created.get(submission)
        for (const time of times) {
          lastArrival = Math.max(lastArrival, time)
          if (at !== undefined) latencies.push(time - at)
        }
      }
      latencies.sort((a, b) => a - b)
      return { count, created, statuses, errors, lateMs, expected, arrived, latencies, started, lastArrival }
    }

    if (WARMUP > 0) await drive(WARMUP)
    const pgPids = () =>
      psql(
        databaseUrl,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
      ).map(Number)
    const pgCpu = () => new Map(pgPids().map((pid) => [pid, cpuMicros(pid) || 0]))
    const serverBefore = cpuMicros(server.pid)
    const workersBefore = workers.map((w) => cpuMicros(w.pid))
    const pgBefore = pgCpu()
    const run = await drive(SECONDS)
    const serverCpu = cpuMicros(server.pid) - serverBefore
    const workersCpu = workers.reduce((sum, w, i) => sum + cpuMicros(w.pid) - workersBefore[i]!, 0)
    let pgCost = 0
    for (const [pid, micros] of pgCpu()) pgCost += micros - (pgBefore.get(pid) ?? 0)

    const received = run.arrived.received
    const perDelivery = (micros: number) => Math.round(micros / Math.max(1, received))
    const seconds = (run.lastArrival - run.started) / 1000
    const statuses = [...run.statuses].map(([status, n]) => `${n} x ${status}`).join(", ")
    console.log(
      [
        `sustained creates on PostgreSQL: ${RATE}/s for ${SECONDS} s (after ${WARMUP} s of warm-up), ${WORKSPACES} workspaces x ${ENDPOINTS} endpoints, events ${EVENTS.join(" + ")}; the server's dispatcher${WORKERS > 0 ? ` and ${WORKERS} worker(s)` : ""}`,
        `  creates: ${run.count} sent, ${statuses}${run.errors > 0 ? `, ${run.errors} failed` : ""}; the load ran at most ${run.lateMs} ms late`,
        `  deliveries: ${received} of ${run.expected} expected (${run.arrived.duplicates} duplicates), ${Math.round(received / seconds)}/s from the first create to the last receipt`,
        `  create-to-receipt ms: p50 ${percentile(run.latencies, 50)}, p99 ${percentile(run.latencies, 99)}, max ${run.latencies.at(-1)}`,
        `  CPU us per delivery: server ${perDelivery(serverCpu)}${WORKERS > 0 ? `, workers ${perDelivery(workersCpu)}` : ""}, PostgreSQL ${perDelivery(pgCost)}; stack ${perDelivery(serverCpu + workersCpu + pgCost)}`
      ].join("\n")
    )
    if (received < run.expected) throw new Error(`${run.expected - received} deliveries never arrived`)
  } finally {
    // Stopped before their database goes, so that none of them logs it vanishing.
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? undefined
          : new Promise((resolve) => {
              child.once("exit", resolve)
              child.kill("SIGTERM")
              setTimeout(() => child.kill("SIGKILL"), 10_000).unref()
            })
      )
    )
    psql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}
