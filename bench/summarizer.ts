/**
 * `pnpm bench:summarizer`: POST /v1/intake-bots/:id/submissions throughput with the
 * built-in summarizer, then with INTAKE_SUMMARIZER=openai pointed at a local model server
 * that answers after BENCH_MODEL_DELAY ms (default 2,000), on the embedded default
 * (PGlite) and, when it answers, on PostgreSQL (INTAKE_TEST_DATABASE_URL). Each run starts
 * the real server (`apps/server/src/main.ts`) on fresh data with a webhook to a local
 * receiver, so deliveries (and their wait for the summary) are part of the load. The
 * target (issue 15): the model run within 10% of the built-in one.
 *
 * BENCH_WARMUP (1 s), BENCH_DURATION (10 s), BENCH_CONNECTIONS (10) change the load.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { type AddressInfo, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { allScopes } from "@intake/domain"
import { freshDatabaseUrl, probeTestServer } from "@intake/postgres/testing"
// The model server alone: the package's index brings vitest.
import { modelServer } from "@intake/testing/model-server"
import autocannon from "autocannon"
import { Effect, Either, Exit, Scope } from "effect"

const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 1)
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
const MODEL_DELAY_MS = Number(process.env.BENCH_MODEL_DELAY ?? 2_000)

const root = join(import.meta.dirname, "..")
const tsx = join(root, "node_modules/.bin/tsx")
const ADMIN_TOKEN = randomUUID()

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as AddressInfo).port
      probe.close(() => resolve(port))
    })
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

const startIntake = async (env: Record<string, string>) => {
  const port = await freePort()
  const child = spawn(tsx, ["src/main.ts"], {
    cwd: join(root, "apps/server"),
    env: {
      PATH: process.env.PATH ?? "",
      // Nothing balances load here: a stopped server need not drain.
      INTAKE_SHUTDOWN_DRAIN: "0s",
      PORT: String(port),
      INTAKE_ADMIN_TOKEN: ADMIN_TOKEN,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      ...env
    },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode} at start`)
    if (Date.now() > deadline) throw new Error("the server did not answer /healthz within 120 s")
    if (
      await fetch(`${baseUrl}/healthz`).then(
        (r) => r.ok,
        () => false
      )
    )
      return { child, baseUrl }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const call = async (baseUrl: string, method: string, path: string, token: string, body?: unknown) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`)
  // biome-ignore lint/suspicious/noExplicitAny: answers are read, not typed
  return JSON.parse(text).data as any
}

/** A Business workspace with limits raised for load, a key, a bot, and a webhook to `receiverUrl`. */
const provision = async (baseUrl: string, receiverUrl: string) => {
  const { workspace } = await call(baseUrl, "POST", "/admin/workspaces", ADMIN_TOKEN, {
    name: "Bench",
    plan: "business"
  })
  await call(baseUrl, "PATCH", `/admin/workspaces/${workspace.id}`, ADMIN_TOKEN, {
    rate_limit_per_minute: 100_000_000,
    monthly_submission_quota: 100_000_000
  })
  const key = (
    await call(baseUrl, "POST", `/admin/workspaces/${workspace.id}/api-keys`, ADMIN_TOKEN, {
      scopes: allScopes
    })
  ).api_key.key as string
  const bot = (
    await call(baseUrl, "POST", `/admin/workspaces/${workspace.id}/intake-bots`, ADMIN_TOKEN, {
      name: "Contact form",
      schema: [
        { name: "name", label: "Name", type: "text", required: true },
        { name: "email", label: "Email", type: "email", required: true },
        { name: "message", label: "Message", type: "long_text" }
      ]
    })
  ).intake_bot
  await call(baseUrl, "POST", "/v1/webhooks", key, { url: receiverUrl, events: ["submission.completed"] })
  return { key, botId: bot.id as string }
}

const postLoad = async (baseUrl: string, key: string, botId: string, seconds: number) => {
  const result = await autocannon({
    url: `${baseUrl}/v1/intake-bots/${botId}/submissions`,
    method: "POST",
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      data: { name: "Ada Lovelace", email: "ada@example.com", message: "A quote, please" }
    }),
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, "idempotency-key": randomUUID() }
        })
      }
    ]
  })
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0)
    throw new Error(`${result.non2xx} answers not 2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 }
}

/** A receiver that answers 204 and counts what it got, and how many carried a model's summary. */
const startReceiver = () =>
  new Promise<{ url: string; received: () => number; modelSummaries: () => number; close: () => void }>(
    (resolve) => {
      let received = 0
      let modelSummaries = 0
      const server = createHttpServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          received++
          if (Buffer.concat(chunks).toString("utf8").includes("(model)")) modelSummaries++
          response.writeHead(204).end()
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
          received: () => received,
          modelSummaries: () => modelSummaries,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })
      )
    }
  )

const run = async (env: Record<string, string>) => {
  const receiver = await startReceiver()
  const server = await startIntake(env)
  try {
    const { key, botId } = await provision(server.baseUrl, receiver.url)
    await postLoad(server.baseUrl, key, botId, WARMUP_SECONDS)
    const load = await postLoad(server.baseUrl, key, botId, DURATION_SECONDS)
    return { ...load, delivered: receiver.received(), withModelSummary: receiver.modelSummaries() }
  } finally {
    await stop(server.child)
    receiver.close()
  }
}

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  const model = await Effect.runPromise(
    Scope.extend(
      modelServer({ kind: "answer", delayMs: MODEL_DELAY_MS, text: "A quote request (model)." }),
      scope
    )
  )
  const modelEnv = {
    INTAKE_SUMMARIZER: "openai",
    INTAKE_SUMMARIZER_URL: model.url,
    INTAKE_SUMMARIZER_MODEL: "bench-model",
    INTAKE_SUMMARIZER_API_KEY: "sk-bench-not-a-key"
  }
  const stores: Array<{ name: string; env: () => Promise<Record<string, string>> }> = [
    {
      name: "embedded (PGlite)",
      env: async () => ({ INTAKE_DATA_DIR: mkdtempSync(join(tmpdir(), "intake-bench-")) })
    }
  ]
  if (Either.isRight(await probeTestServer()))
    stores.push({
      name: "PostgreSQL",
      env: async () => ({
        DATABASE_URL: (await Effect.runPromise(Scope.extend(freshDatabaseUrl(), scope))).url
      })
    })
  else console.log("PostgreSQL rows left out: it does not answer")
  console.log(
    `bench:summarizer: POST throughput, ${CONNECTIONS} connections, ${DURATION_SECONDS} s, model answering in ${MODEL_DELAY_MS} ms`
  )
  const lines: Array<string> = []
  try {
    for (const store of stores) {
      const builtInEnv = await store.env()
      const builtIn = await run(builtInEnv)
      const modelRunEnv = await store.env()
      const withModel = await run({ ...modelRunEnv, ...modelEnv })
      for (const env of [builtInEnv, modelRunEnv])
        if (env.INTAKE_DATA_DIR !== undefined) rmSync(env.INTAKE_DATA_DIR, { recursive: true, force: true })
      const ratio = withModel.rps / builtIn.rps
      lines.push(
        `${store.name}: built-in ${builtIn.rps.toFixed(0)} req/s (p50 ${builtIn.p50} ms, p99 ${builtIn.p99} ms); ` +
          `model ${withModel.rps.toFixed(0)} req/s (p50 ${withModel.p50} ms, p99 ${withModel.p99} ms); ` +
          `ratio ${ratio.toFixed(3)}: ${ratio >= 0.9 ? "within" : "NOT within"} 10%. ` +
          `Deliveries during the run: ${builtIn.delivered} built-in, ${withModel.delivered} with the model ` +
          `(${withModel.withModelSummary} carrying its summary); model calls ${model.requests.length}`
      )
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  for (const line of lines) console.log(line)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
