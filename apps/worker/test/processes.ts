/**
 * Worker processes (`src/main.ts`, as `pnpm start` runs it) for tests, with what they
 * need around them: a local receiver, a fresh PostgreSQL database (absent PostgreSQL
 * skips, except under CI=true where it fails), and events recorded on it the way the
 * Submissions use case records them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe } from "@effect/vitest"
import {
  DeliveryWakeups,
  EventOutbox,
  type IntakeBot,
  IntakeBotRepository,
  queueDeliveries,
  SubmissionRepository,
  UnitOfWork,
  UseCasesLive,
  WebhookSettings,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { instancePortsOn, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { anIntakeBot, aWorkspace, domainEventRecord, submissionRecord } from "@intake/testing"
import { Clock, Duration, Effect, Layer, Redacted } from "effect"

const workerDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the worker process tests. Set INTAKE_TEST_DATABASE_URL to run them.`)
  return false
})()
/** `describe` when PostgreSQL answers; skipped without it, except under CI=true (then the probe throws). */
export const describePostgres = postgresAvailable ? describe : describe.skip

export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly eventId: string
  /** Epoch ms at which the request's body had arrived. */
  readonly receivedAt: number
}

/**
 * A receiver on 127.0.0.1 answering 204 after `delayMs` (never when null: it hangs until
 * the sender gives up); keeps every request as it arrives (`received`) and the event id of
 * every answer once sent (`answered`).
 */
export const slowReceiver = (delayMs: number | null) =>
  Effect.acquireRelease(
    Effect.async<{
      url: string
      received: Array<Received>
      answered: Array<string>
      close: () => void
    }>((resume) => {
      const received: Array<Received> = []
      const answered: Array<string> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          const eventId: string = JSON.parse(body).id
          received.push({ headers: request.headers, body, eventId, receivedAt: Date.now() })
          if (delayMs !== null)
            setTimeout(() => response.writeHead(204).end(() => answered.push(eventId)), delayMs)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
            received,
            answered,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      )
    }),
    (receiver) => Effect.sync(receiver.close)
  )

/** The worker's environment on the database at `databaseUrl`, receivers on 127.0.0.1 allowed. */
export const workerEnv = (databaseUrl: string, extra: Record<string, string> = {}) => ({
  DATABASE_URL: databaseUrl,
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  ...extra
})

/** A worker process, ready once it printed so (at most 60 s); SIGKILLed when the scope closes. */
export const startWorker = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: workerDir,
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString()
      })
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString()
      })
      return { child, output: () => output }
    }),
    ({ child }) => Effect.sync(() => killNow(child))
  ).pipe(
    Effect.tap((worker) =>
      waitUntil(
        () => worker.output().includes("worker ready"),
        60_000,
        () => worker.output()
      ).pipe(
        Effect.filterOrFail(
          () => worker.child.exitCode === null,
          () => new Error(`the worker exited: ${worker.output()}`)
        )
      )
    )
  )

export const killNow = (child: ChildProcess) => {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
}

/** Waits (real time) until `check` holds; fails after `timeoutMs`. */
export const waitUntil = (check: () => boolean, timeoutMs: number, describe: () => string = () => "") =>
  Effect.gen(function* () {
    while (!check()) yield* Effect.sleep(Duration.millis(20))
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeoutMs),
      onTimeout: () => new Error(`not within ${timeoutMs} ms ${describe()}`)
    })
  )

/** The use cases on the database at `url`, as a server would run them (no dispatcher here). */
export const useCasesOn = (url: string) =>
  UseCasesLive.pipe(
    Layer.provideMerge(
      Layer.merge(
        instancePortsOn(PgClient.layer({ url: Redacted.make(url) })),
        WebhookSettings.layer({ allowPrivateNetworks: true })
      )
    )
  )

/** A workspace with one bot and one endpoint at `receiverUrl`, created through the Webhooks use case. */
export const givenEndpoint = (receiverUrl: string) =>
  Effect.gen(function* () {
    const workspace = aWorkspace({ plan: "business" })
    yield* (yield* WorkspaceRepository).insert(workspace)
    const bot = anIntakeBot({ workspaceId: workspace.id })
    yield* (yield* IntakeBotRepository).insert(bot)
    const endpoint = yield* (yield* Webhooks).create(workspace.id, {
      url: receiverUrl,
      events: ["submission.completed"]
    })
    return { bot, endpoint }
  })

/**
 * `count` completed submissions of `bot` with their events, recorded the way the
 * Submissions use case records them (submission, outbox event and queued attempts in one
 * unit of work, then the wake-up). Their attempts are due `dueInMs` from now (the way a
 * retry waits; their createdAt is that moment too). Answers the events.
 */
export const recordEvents = (
  bot: IntakeBot,
  count: number,
  options: {
    readonly dueInMs?: number
    /** The traceparent of the request that raised them, as a create with traces on keeps it. */
    readonly traceParent?: string
  } = {}
) =>
  Effect.gen(function* () {
    const [uow, submissions, outbox, wakeups] = yield* Effect.all([
      UnitOfWork,
      SubmissionRepository,
      EventOutbox,
      DeliveryWakeups
    ])
    const now = yield* Clock.currentTimeMillis
    const events = yield* uow.transaction(
      Effect.gen(function* () {
        const records = Array.from({ length: count }, () =>
          submissionRecord(bot, { createdAt: now, updatedAt: now })
        )
        for (const record of records) yield* submissions.insert(record, [])
        const events = records.map((record) =>
          domainEventRecord(
            record,
            options.traceParent === undefined ? {} : { traceParent: options.traceParent }
          )
        )
        yield* outbox.append(events)
        yield* queueDeliveries(events, now + (options.dueInMs ?? 0))
        return events
      })
    )
    yield* wakeups.notify
    return events
  })
