/**
 * `pnpm bench`: Intake under load, on the embedded default (PGlite) and on PostgreSQL +
 * Redis, beside a bare node:http server measured in the same run. For each store it
 * starts the real server (built and run as `pnpm start` does: `apps/server/dist/main.js`) as a child
 * process, provisions a Business workspace through the admin API (rate limit and quota
 * raised, as docs/rules.md, Operator API allows for load tests), then for each endpoint:
 *
 * - autocannon: BENCH_WARMUP seconds of warm-up (default 1), then BENCH_DURATION seconds
 *   (default 5) with BENCH_CONNECTIONS connections (default 10); every POST carries a
 *   fresh Idempotency-Key;
 *   the table has the server's CPU per request and, on PostgreSQL, that of the database
 *   backends serving its database (from /proc, when PostgreSQL runs on this machine);
 * - the same load against a bare node:http server answering a JSON body of the same size;
 * - round trips: BENCH_ROUND_TRIP_REQUESTS requests (default 50) one at a time after the
 *   load, with SQL statements and Redis commands counted at the drivers
 *   (`bench/round-trips.ts`), charged to the request they ran for.
 *
 * Then the delivery benchmark (`bench/delivery.ts`) on each store. It prints one table,
 * then the round trips. PostgreSQL (INTAKE_TEST_DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/test; a fresh database is created and dropped) and
 * Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379) rows are left out, with the
 * reason, when those do not answer.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { allScopes } from "@intake/domain"
import { freshDatabaseUrl, probeTestServer } from "@intake/postgres/testing"
import autocannon from "autocannon"
import { Effect, Either, Exit, Scope } from "effect"
import { cpuMicros } from "./process-cpu.js"
import type { RoundTripCounts } from "./round-trips.js"
import {
  ADMIN_TOKEN,
  databaseBackendsCpu,
  databaseCpuSince,
  peakRssMb,
  root,
  startBareServer,
  startIntake,
  stop,
  tsx
} from "./run-servers.js"

const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 1)
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
const ROUND_TRIP_REQUESTS = Number(process.env.BENCH_ROUND_TRIP_REQUESTS ?? 50)
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379"
const SEEDED_SUBMISSIONS = 60

// ---------------------------------------------------------------------------------------
// The workload

interface Endpoint {
  readonly label: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: string
  readonly idempotent?: boolean
}

const submissionBody = JSON.stringify({
  data: { name: "Ada Lovelace", email: "ada@example.com", topic: "sales", message: "Hello" }
})

const endpoints = (botId: string): ReadonlyArray<Endpoint> => [
  { label: "GET /v1/intake-bots/:id", method: "GET", path: `/v1/intake-bots/${botId}` },
  {
    label: "GET /v1/intake-bots/:id/submissions?limit=50",
    method: "GET",
    path: `/v1/intake-bots/${botId}/submissions?limit=50`
  },
  {
    label: "POST /v1/intake-bots/:id/submissions",
    method: "POST",
    path: `/v1/intake-bots/${botId}/submissions`,
    body: submissionBody,
    idempotent: true
  }
]

const call = async (
  url: string,
  init: { method?: string; body?: string | undefined; headers?: Record<string, string>; token: string }
) => {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    ...(init.body === undefined ? {} : { body: init.body }),
    headers: { authorization: `Bearer ${init.token}`, "content-type": "application/json", ...init.headers }
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url} answered ${response.status}: ${text}`)
  return { text, json: JSON.parse(text) as { data: Record<string, { id: string; key?: string }> } }
}

/** A Business workspace with limits raised for load, a key with every scope, one bot. */
const provision = async (baseUrl: string) => {
  const admin = (method: string, path: string, body: unknown) =>
    call(`${baseUrl}${path}`, { method, body: JSON.stringify(body), token: ADMIN_TOKEN })
  const workspace = (await admin("POST", "/admin/workspaces", { name: "Bench", plan: "business" })).json.data
    .workspace!
  await admin("PATCH", `/admin/workspaces/${workspace.id}`, {
    rate_limit_per_minute: 100_000_000,
    monthly_submission_quota: 100_000_000
  })
  const key = (await admin("POST", `/admin/workspaces/${workspace.id}/api-keys`, { scopes: allScopes })).json
    .data.api_key!.key!
  const bot = (
    await admin("POST", `/admin/workspaces/${workspace.id}/intake-bots`, {
      name: "Contact form",
      status: "ACTIVE",
      schema: [
        { name: "name", label: "Name", type: "text", required: true },
        { name: "email", label: "Email", type: "email", required: true },
        { name: "topic", label: "Topic", type: "select", options: ["sales", "support", "other"] },
        { name: "message", label: "Message", type: "long_text" }
      ]
    })
  ).json.data.intake_bot!
  for (let i = 0; i < SEEDED_SUBMISSIONS; i++) {
    await call(`${baseUrl}/v1/intake-bots/${bot.id}/submissions`, {
      method: "POST",
      body: submissionBody,
      token: key,
      headers: { "idempotency-key": randomUUID() }
    })
  }
  return { key, botId: bot.id }
}

interface Load {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** The server's CPU time per request over the run (when its pid is given), in microseconds. */
  readonly cpuUsPerRequest: number
  /** The database backends' CPU time per request (when the database is given and local), in microseconds. */
  readonly databaseCpuUsPerRequest: number
}

const load = async (
  url: string,
  endpoint: Endpoint,
  key: string,
  seconds: number,
  serverPid?: number,
  database?: string
): Promise<Load> => {
  const cpuBefore = cpuMicros(serverPid)
  const databaseBefore = database === undefined ? new Map<number, number>() : databaseBackendsCpu(database)
  const result = await autocannon({
    url,
    method: endpoint.method,
    connections: CONNECTIONS,
    duration: seconds,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-bench-label": endpoint.label
    },
    ...(endpoint.body === undefined ? {} : { body: endpoint.body }),
    requests: [
      {
        // A fresh Idempotency-Key on every POST, so that each one creates a submission.
        setupRequest: (request) =>
          endpoint.idempotent
            ? { ...request, headers: { ...request.headers, "idempotency-key": randomUUID() } }
            : request
      }
    ]
  })
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0) {
    throw new Error(
      `${endpoint.label} at ${url}: ${result.non2xx} answers not 2xx, ${result.errors} errors, ${result.timeouts} timeouts`
    )
  }
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerRequest: (cpuMicros(serverPid) - cpuBefore) / result.requests.total,
    databaseCpuUsPerRequest:
      database === undefined ? Number.NaN : databaseCpuSince(databaseBefore, database) / result.requests.total
  }
}

interface Row {
  readonly store: string
  readonly workload: string
  readonly rate: string
  readonly p50: string
  readonly p99: string
  readonly cpu: string
  readonly databaseCpu: string
  readonly rss: string
  readonly bare: string
  readonly ratio: string
}

interface RoundTripRow {
  readonly store: string
  readonly endpoint: string
  readonly counts: RoundTripCounts
}

const benchServer = async (store: string, env: Record<string, string>) => {
  const rows: Array<Row> = []
  const roundTripRows: Array<RoundTripRow> = []
  let background = 0
  const server = await startIntake(env)
  const database = env.DATABASE_URL === undefined ? undefined : new URL(env.DATABASE_URL).pathname.slice(1)
  try {
    const { key, botId } = await provision(server.baseUrl)
    for (const endpoint of endpoints(botId)) {
      const url = `${server.baseUrl}${endpoint.path}`
      const sample = await call(url, {
        method: endpoint.method,
        body: endpoint.body,
        token: key,
        headers: endpoint.idempotent ? { "idempotency-key": randomUUID() } : {}
      })
      await load(url, endpoint, key, WARMUP_SECONDS)
      const intake = await load(url, endpoint, key, DURATION_SECONDS, server.child.pid, database)
      const bareServer = await startBareServer(Buffer.byteLength(sample.text))
      let bare: Load
      try {
        const bareUrl = `${bareServer.url}${endpoint.path}`
        await load(bareUrl, endpoint, key, WARMUP_SECONDS)
        bare = await load(bareUrl, endpoint, key, DURATION_SECONDS)
      } finally {
        await stop(bareServer.child)
      }
      rows.push({
        store,
        workload: endpoint.label,
        rate: `${Math.round(intake.rps)} req/s`,
        p50: `${intake.p50} ms`,
        p99: `${intake.p99} ms`,
        cpu: `${Math.round(intake.cpuUsPerRequest)} us`,
        databaseCpu: Number.isNaN(intake.databaseCpuUsPerRequest)
          ? ""
          : `${Math.round(intake.databaseCpuUsPerRequest)} us`,
        rss: "",
        bare: `${Math.round(bare.rps)} req/s`,
        ratio: (intake.rps / bare.rps).toFixed(3)
      })

      await server.resetRoundTrips()
      for (let i = 0; i < ROUND_TRIP_REQUESTS; i++) {
        await call(url, {
          method: endpoint.method,
          body: endpoint.body,
          token: key,
          headers: {
            "x-bench-label": endpoint.label,
            ...(endpoint.idempotent ? { "idempotency-key": randomUUID() } : {})
          }
        })
      }
      const measured = await server.roundTrips()
      const counts = measured[endpoint.label]
      if (counts !== undefined) roundTripRows.push({ store, endpoint: endpoint.label, counts })
      background += (measured.background?.sql ?? 0) + (measured.background?.redis ?? 0)
    }
    const peak = `${peakRssMb(server.child.pid)} MB`
    return { rows: rows.map((row) => ({ ...row, rss: peak })), roundTripRows, background }
  } finally {
    await stop(server.child)
  }
}

interface DeliveryFigures {
  readonly deliveriesPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly peakRssMb: number
}

const benchDelivery = (store: string, env: Record<string, string>) =>
  new Promise<Row>((resolve, reject) => {
    const child = spawn(tsx, [join(root, "bench/delivery.ts")], {
      cwd: root,
      env: { ...process.env, ...env, BENCH_RESULT_JSON: "1" },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let output = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once("exit", (code) => {
      const line = output.split("\n").find((text) => text.startsWith("bench-result "))
      if (code !== 0 || line === undefined)
        return reject(new Error(`delivery bench failed (${code}):\n${output}`))
      const figures = JSON.parse(line.slice("bench-result ".length)) as DeliveryFigures
      resolve({
        store,
        workload: "webhook delivery (event to first attempt)",
        rate: `${figures.deliveriesPerSecond} deliveries/s`,
        p50: `${figures.p50} ms`,
        p99: `${figures.p99} ms`,
        cpu: "",
        databaseCpu: "",
        // The delivery bench's own process (below the table), not a server's.
        rss: `${figures.peakRssMb} MB (bench)`,
        bare: "",
        ratio: ""
      })
    })
  })

const redisAnswers = (url: string) =>
  new Promise<Either.Either<void, string>>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port || 6379) })
    socket.setTimeout(2_000, () => socket.destroy(new Error("no answer within 2 s")))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => {
      socket.end()
      resolve(
        data.toString().startsWith("+PONG") ? Either.right(undefined) : Either.left(data.toString().trim())
      )
    })
    socket.once("error", (error) => resolve(Either.left(error.message)))
  })

// ---------------------------------------------------------------------------------------
// The run

const printTable = (header: ReadonlyArray<string>, lines: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => line[column]!.length))
  )
  const format = (cells: ReadonlyArray<string>) =>
    cells.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")
  console.log(format(header))
  console.log(widths.map((width) => "-".repeat(width)).join("-|-"))
  for (const line of lines) console.log(format(line))
}

const backgroundNote = (store: string, statements: number) =>
  `${store}: ${statements} statements or commands ran for no request during the round-trip phases (the dispatcher's polls, the purge job); they are in no figure above.`

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  const dataDir = mkdtempSync(join(tmpdir(), "intake-bench-"))
  const rows: Array<Row> = []
  const roundTripRows: Array<RoundTripRow> = []
  const notes: Array<string> = []
  try {
    console.log(
      `pnpm bench: ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per endpoint, node:http beside each`
    )
    // The first start creates the database (initdb), whose memory peak is not serving's:
    // the measured server starts on a data directory that exists, as every later start does.
    await stop((await startIntake({ INTAKE_DATA_DIR: dataDir })).child)
    const embedded = await benchServer("embedded (PGlite)", { INTAKE_DATA_DIR: dataDir })
    rows.push(...embedded.rows)
    roundTripRows.push(...embedded.roundTripRows)
    notes.push(backgroundNote("embedded (PGlite)", embedded.background))

    const postgres = await probeTestServer()
    const redis = await redisAnswers(REDIS_URL)
    if (Either.isLeft(postgres)) notes.push(`PostgreSQL rows left out: ${postgres.left}`)
    if (Either.isLeft(redis)) notes.push(`Redis rows left out: ${redis.left}`)
    if (Either.isRight(postgres) && Either.isRight(redis)) {
      const database = await Effect.runPromise(Scope.extend(freshDatabaseUrl(), scope))
      const networked = await benchServer("PostgreSQL + Redis", {
        DATABASE_URL: database.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: `bench-${randomUUID()}:`
      })
      rows.push(...networked.rows)
      roundTripRows.push(...networked.roundTripRows)
      notes.push(backgroundNote("PostgreSQL + Redis", networked.background))
    }

    rows.push(await benchDelivery("embedded (PGlite)", {}))
    if (Either.isRight(postgres)) {
      const database = await Effect.runPromise(Scope.extend(freshDatabaseUrl(), scope))
      rows.push(await benchDelivery("PostgreSQL", { DATABASE_URL: database.url }))
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }

  console.log("")
  printTable(
    [
      "store",
      "workload",
      "throughput",
      "p50",
      "p99",
      "CPU/request",
      "database CPU/request",
      "peak RSS",
      "node:http",
      "ratio"
    ],
    rows.map((row) => [
      row.store,
      row.workload,
      row.rate,
      row.p50,
      row.p99,
      row.cpu,
      row.databaseCpu,
      row.rss,
      row.bare,
      row.ratio
    ])
  )
  console.log(
    "peak RSS: the server process's on the endpoint rows; on the delivery rows, the delivery bench's own process (dispatcher, receiver and, on PGlite, an in-memory database), marked (bench)."
  )
  console.log("")
  console.log(`Round trips per request, after warm-up (${ROUND_TRIP_REQUESTS} requests one at a time):`)
  printTable(
    ["store", "endpoint", "SQL", "Redis"],
    roundTripRows.map(({ store, endpoint, counts }) => [
      store,
      endpoint,
      (counts.sql / counts.requests).toFixed(2),
      (counts.redis / counts.requests).toFixed(2)
    ])
  )
  const target = roundTripRows.filter(({ endpoint }) => endpoint === endpoints("")[0]!.label)
  for (const { store, counts } of target) {
    const keyLookups = Object.keys(counts.calls).filter((call) => call.includes("api_keys")).length
    const met = counts.sql / counts.requests <= 1 && counts.redis / counts.requests <= 1 && keyLookups === 0
    console.log(
      `${store}: GET one bot ${met ? "meets" : "MISSES"} the target (no key look-up, at most 1 SQL query and 1 Redis call)`
    )
  }
  for (const { store, endpoint, counts } of roundTripRows) {
    console.log(`\n${store}, ${endpoint}, per request:`)
    for (const [what, times] of Object.entries(counts.calls)) {
      console.log(`  ${(times / counts.requests).toFixed(2)} × ${what}`)
    }
  }
  for (const note of notes) console.log(note)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
