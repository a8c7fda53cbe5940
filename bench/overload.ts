/**
 * `pnpm bench:overload`: the overload run of docs/rules.md, Overload. It starts the real
 * server as `pnpm start` does (`apps/server/dist/main.js`, built first) on the embedded
 * default, with the admission bounds' defaults. A first start creates the database in a
 * fresh directory and is stopped (creating it costs memory that process keeps); the measured
 * server is the next start on that directory, as a deployment runs after its first start.
 * It provisions a workspace whose key's rate limit and quota are raised and a bot of ten
 * long-text fields, then sends OVERLOAD_CLIENTS (256) creates of about 1 MB at once,
 * OVERLOAD_ROUNDS (1) times each, while another thread asks /healthz every 100 ms. It prints
 * the server's RSS, the answers by status, /healthz's worst latency, the latest answer's
 * time, and whether every acknowledged (201) create reads back. `OVERLOAD_ENV` adds
 * variables to the server (`INTAKE_MAX_BODY_BYTES_IN_FLIGHT=64mb,REQUEST_TIMEOUT=30s`).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Worker } from "node:worker_threads"

const CLIENTS = Number(process.env.OVERLOAD_CLIENTS ?? 256)
const ROUNDS = Number(process.env.OVERLOAD_ROUNDS ?? 1)
const FIELDS = 10
const FIELD_CHARACTERS = 100_000
const ADMIN_TOKEN = randomUUID()
const root = join(import.meta.dirname, "..")

/** Asks /healthz every 100 ms and posts each answer's status and time, until terminated. */
const PROBER = `
const { parentPort, workerData } = require("node:worker_threads")
const { performance } = require("node:perf_hooks")
const probe = async () => {
  const asked = performance.now()
  const status = await fetch(workerData.url).then(async (response) => { await response.text(); return response.status }, () => 0)
  parentPort.postMessage({ status, ms: performance.now() - asked })
  setTimeout(probe, 100)
}
probe()
`

const extraEnv = Object.fromEntries(
  (process.env.OVERLOAD_ENV ?? "")
    .split(",")
    .filter((pair) => pair.includes("="))
    .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])
)

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** A figure of /proc/<pid>/status in MB (VmRSS now, VmHWM the peak so far); NaN off Linux. */
const statusMb = (pid: number | undefined, field: "VmRSS" | "VmHWM") => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    return Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024)
  } catch {
    return Number.NaN
  }
}

const startServer = (port: number, dataDir: string) =>
  spawn(process.execPath, [join(root, "apps/server/dist/main.js")], {
    cwd: join(root, "apps/server"),
    env: {
      PATH: process.env.PATH ?? "",
      PORT: String(port),
      INTAKE_DATA_DIR: dataDir,
      INTAKE_ADMIN_TOKEN: ADMIN_TOKEN,
      INTAKE_DEMO: "false",
      INTAKE_SHUTDOWN_DRAIN: "0s",
      LOG_LEVEL: "warn",
      ...extraEnv
    },
    stdio: ["ignore", "ignore", "inherit"]
  })

const healthy = (baseUrl: string) =>
  fetch(`${baseUrl}/healthz`).then(
    (response) => response.ok,
    () => false
  )

const listening = async (server: ChildProcess, baseUrl: string) => {
  const startedAt = Date.now()
  while (!(await healthy(baseUrl))) {
    if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode} at start`)
    if (Date.now() - startedAt > 120_000) throw new Error("the server did not answer /healthz within 120 s")
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const stop = async (server: ChildProcess) => {
  const stopped = new Promise<void>((resolve) => {
    if (server.exitCode !== null) resolve()
    else server.once("exit", () => resolve())
  })
  server.kill("SIGTERM")
  const killer = setTimeout(() => server.kill("SIGKILL"), 15_000)
  await stopped
  clearTimeout(killer)
}

const json = async (baseUrl: string, method: string, path: string, token: string, body?: unknown) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes are the contract's, read as the bench needs them
  const parsed = (await response.json()) as any
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`)
  return parsed.data
}

/** A workspace with raised limits, a key, and a bot whose valid bodies reach 1 MB. */
const provision = async (baseUrl: string) => {
  const admin = (method: string, path: string, body: unknown) =>
    json(baseUrl, method, path, ADMIN_TOKEN, body)
  const { workspace } = await admin("POST", "/admin/workspaces", { name: "Overload", plan: "business" })
  await admin("PATCH", `/admin/workspaces/${workspace.id}`, {
    rate_limit_per_minute: 1_000_000,
    monthly_submission_quota: 1_000_000
  })
  const scopes = ["read:intake-bots", "write:intake-bots", "read:submissions"]
  const key: string = (await admin("POST", `/admin/workspaces/${workspace.id}/api-keys`, { scopes })).api_key
    .key
  const schema = Array.from({ length: FIELDS }, (_, i) => ({
    name: `part${i}`,
    label: `Part ${i}`,
    type: "long_text"
  }))
  const { intake_bot } = await admin("POST", `/admin/workspaces/${workspace.id}/intake-bots`, {
    name: "Large form",
    status: "ACTIVE",
    schema
  })
  // One body for every create (each with its own Idempotency-Key): the client stays small.
  const body = Buffer.from(
    JSON.stringify({
      data: Object.fromEntries(schema.map(({ name }) => [name, "x".repeat(FIELD_CHARACTERS)]))
    })
  )
  return { key, path: `/v1/intake-bots/${intake_bot.id}/submissions`, body }
}

const main = async () => {
  execFileSync(process.execPath, [join(root, "apps/server/build.mjs")], { stdio: "inherit" })
  const dataDir = mkdtempSync(join(tmpdir(), "intake-overload-"))
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  try {
    const creating = startServer(port, dataDir)
    let firstStartRss = Number.NaN
    try {
      await listening(creating, baseUrl)
      firstStartRss = statusMb(creating.pid, "VmRSS")
    } finally {
      await stop(creating)
    }

    const server = startServer(port, dataDir)
    try {
      await listening(server, baseUrl)
      const { key, path, body } = await provision(baseUrl)

      const rssBeforeLoad = statusMb(server.pid, "VmRSS")
      let rssDuringLoad = rssBeforeLoad
      const sampling = setInterval(() => {
        rssDuringLoad = Math.max(rssDuringLoad, statusMb(server.pid, "VmRSS"))
      }, 20)
      // From a thread of its own: this one is busy sending bodies, and its lateness is not the server's.
      const health = { asked: 0, failed: 0, worstMs: 0 }
      const prober = new Worker(PROBER, { eval: true, workerData: { url: `${baseUrl}/healthz` } })
      prober.on("message", (probe: { readonly status: number; readonly ms: number }) => {
        health.asked++
        if (probe.status !== 200) health.failed++
        health.worstMs = Math.max(health.worstMs, probe.ms)
      })

      const statuses = new Map<string, number>()
      const created: Array<string> = []
      let latestAnswerMs = 0
      const loadStartedAt = performance.now()
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          for (let round = 0; round < ROUNDS; round++) {
            const sentAt = performance.now()
            let status: string
            try {
              const response = await fetch(`${baseUrl}${path}`, {
                method: "POST",
                headers: {
                  authorization: `Bearer ${key}`,
                  "content-type": "application/json",
                  "idempotency-key": randomUUID()
                },
                body
              })
              const answer = (await response.json().catch(() => undefined)) as
                | { readonly data: { readonly submission: { readonly id: string } } }
                | undefined
              status = String(response.status)
              if (response.status === 201 && answer !== undefined) created.push(answer.data.submission.id)
            } catch (error) {
              status = `network error (${(error as { cause?: { code?: string } }).cause?.code ?? String(error)})`
            }
            latestAnswerMs = Math.max(latestAnswerMs, performance.now() - sentAt)
            statuses.set(status, (statuses.get(status) ?? 0) + 1)
          }
        })
      )
      const loadMs = performance.now() - loadStartedAt
      await prober.terminate()
      clearInterval(sampling)
      const peakRss = statusMb(server.pid, "VmHWM")

      let present = 0
      for (const id of created) {
        const response = await fetch(`${baseUrl}${path}/${id}`, {
          headers: { authorization: `Bearer ${key}` }
        })
        await response.arrayBuffer()
        if (response.status === 200) present++
      }

      const counts = [...statuses.entries()].sort().map(([status, count]) => `${status}: ${count}`)
      const env = Object.keys(extraEnv).length > 0 ? ` (${process.env.OVERLOAD_ENV})` : ""
      console.log(
        [
          `overload: ${CLIENTS} clients x ${ROUNDS} round(s) of ${body.length.toLocaleString("en")}-byte creates at once, ${extraEnv.DATABASE_URL === undefined ? "embedded default" : "PostgreSQL"}${env}`,
          `  answers by status: ${counts.join(", ")} (the load took ${(loadMs / 1000).toFixed(1)} s)`,
          `  server peak RSS: ${peakRss} MB (${rssBeforeLoad} MB before the load, at most ${rssDuringLoad} MB sampled every 20 ms during it)`,
          `  /healthz: ${health.asked} asked during the load, ${health.failed} not 200, worst ${Math.round(health.worstMs)} ms`,
          `  latest answer: ${(latestAnswerMs / 1000).toFixed(2)} s after its request was sent (the deadline is REQUEST_TIMEOUT, 30 s by default)`,
          `  acknowledged creates read back: ${present} of ${created.length}`,
          `  (the start that created the database held ${firstStartRss} MB once listening)`
        ].join("\n")
      )
    } finally {
      await stop(server)
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
