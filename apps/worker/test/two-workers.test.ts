/**
 * Two worker processes (`src/main.ts`, as `pnpm start` runs it) on one fresh PostgreSQL
 * database deliver 1,000 events to a local receiver: in normal operation every event
 * arrives exactly once; when one worker is killed with SIGKILL mid-run, every event still
 * arrives at least once, a duplicate carrying the same webhook-id as its first delivery.
 * This process creates the endpoint through the Webhooks use case and records the events
 * as the Submissions use case does (outbox and queued attempts in one unit of work, then
 * NOTIFY), on the same database.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import {
  DeliveryWakeups,
  EventOutbox,
  IntakeBotRepository,
  queueDeliveries,
  SubmissionRepository,
  UnitOfWork,
  UseCasesLive,
  WebhookSettings,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { freshDatabaseUrl, pgPortsOn, probeTestServer, testServerUrl } from "@intake/postgres"
import { anIntakeBot, aWorkspace, domainEventRecord, submissionRecord } from "@intake/testing"
import { Clock, Duration, Effect, Layer, Redacted } from "effect"
import { Webhook } from "standardwebhooks"

const EVENTS = 1_000
const workerDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the two-worker test. Set INTAKE_TEST_DATABASE_URL to run it.`)
  return false
})()
const describePostgres = postgresAvailable ? describe : describe.skip

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly eventId: string
}

/** A receiver on 127.0.0.1 answering 204 after `delayMs`; keeps every request. */
const slowReceiver = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; received: Array<Received>; close: () => void }>((resume) => {
      const received: Array<Received> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          received.push({ headers: request.headers, body, eventId: JSON.parse(body).id })
          setTimeout(() => response.writeHead(204).end(), delayMs)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
            received,
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

/** A worker process, ready once it printed so (at most 60 s); SIGKILLed when the scope closes. */
const startWorker = (env: Record<string, string>) =>
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

const killNow = (child: ChildProcess) => {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
}

/** Waits (real time) until `check` holds; fails after `timeoutMs`. */
const waitUntil = (check: () => boolean, timeoutMs: number, describe: () => string = () => "") =>
  Effect.gen(function* () {
    while (!check()) yield* Effect.sleep(Duration.millis(20))
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeoutMs),
      onTimeout: () => new Error(`not within ${timeoutMs} ms ${describe()}`)
    })
  )

/** The use cases on the database at `url`, as a server would run them (no dispatcher here). */
const useCasesOn = (url: string) =>
  UseCasesLive.pipe(
    Layer.provideMerge(
      Layer.merge(
        pgPortsOn(PgClient.layer({ url: Redacted.make(url) })),
        WebhookSettings.layer({ allowPrivateNetworks: true })
      )
    )
  )

/**
 * A workspace with one bot and one endpoint at `receiverUrl` (through the Webhooks use
 * case), then EVENTS completed submissions with their events, recorded the way the
 * Submissions use case records them (submission, outbox event and queued attempts in one
 * unit of work, then the wake-up), a hundred per unit of work to keep the test short.
 */
const createEvents = (receiverUrl: string) =>
  Effect.gen(function* () {
    const workspace = aWorkspace({ plan: "business" })
    yield* (yield* WorkspaceRepository).insert(workspace)
    const bot = anIntakeBot({ workspaceId: workspace.id })
    yield* (yield* IntakeBotRepository).insert(bot)
    const endpoint = yield* (yield* Webhooks).create(workspace.id, {
      url: receiverUrl,
      events: ["submission.completed"]
    })
    const [uow, submissions, outbox, wakeups] = yield* Effect.all([
      UnitOfWork,
      SubmissionRepository,
      EventOutbox,
      DeliveryWakeups
    ])
    const batch = (size: number) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* uow.transaction(
          Effect.gen(function* () {
            const records = Array.from({ length: size }, () =>
              submissionRecord(bot, { createdAt: now, updatedAt: now })
            )
            for (const record of records) yield* submissions.insert(record, [])
            const events = records.map((record) => domainEventRecord(record))
            yield* outbox.append(events)
            yield* queueDeliveries(events, now)
          })
        )
        yield* wakeups.notify
      })
    yield* Effect.forEach(Array.from({ length: EVENTS / 100 }), () => batch(100), {
      concurrency: 2,
      discard: true
    })
    return endpoint
  })

/** What the database says of the run: the events, and the attempts by status. */
const storedOutcome = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const events = yield* sql<{ id: string }>`SELECT id FROM domain_events WHERE type = 'submission.completed'`
  const attempts = yield* sql<{ status: string; count: string }>`SELECT status, count(*) AS count
    FROM deliveries GROUP BY status ORDER BY status`
  return {
    eventIds: events.map((row) => row.id).sort(),
    attempts: Object.fromEntries(attempts.map((row) => [row.status, Number(row.count)]))
  }
})

/** Waits until every event's attempt is finished in the database; answers the outcome. */
const settled = Effect.gen(function* () {
  for (;;) {
    const outcome = yield* storedOutcome
    if (outcome.eventIds.length === EVENTS && outcome.attempts.pending === undefined) return outcome
    yield* Effect.sleep(Duration.millis(100))
  }
}).pipe(
  Effect.timeoutFail({
    duration: Duration.seconds(30),
    onTimeout: () => new Error("the deliveries did not settle within 30 s")
  })
)

/** Every request verifies with its endpoint's secret, and its webhook-id is the event id. */
const expectVerified = (received: ReadonlyArray<Received>, secret: string) => {
  const verifier = new Webhook(secret)
  for (const request of received) {
    expect(() => verifier.verify(request.body, request.headers as Record<string, string>)).not.toThrow()
    expect(request.headers["webhook-id"]).toBe(request.eventId)
  }
}

const countBy = (received: ReadonlyArray<Received>) => {
  const counts = new Map<string, number>()
  for (const request of received) counts.set(request.eventId, (counts.get(request.eventId) ?? 0) + 1)
  return counts
}

const workerEnv = (databaseUrl: string, leaseMs: number) => ({
  DATABASE_URL: databaseUrl,
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  WEBHOOK_LEASE: `${leaseMs}ms`,
  WEBHOOK_POLL_INTERVAL: "500ms",
  WEBHOOK_DISPATCH_CONCURRENCY: "16"
})

describePostgres("two worker processes on one database", () => {
  it.live(
    `deliver ${EVENTS} events, each exactly once`,
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const receiver = yield* slowReceiver(0)
        const services = yield* Layer.build(useCasesOn(database.url))
        // Creating the events while the workers start: they find some queued, others wake them.
        const [endpoint] = yield* Effect.all(
          [
            Effect.provide(createEvents(receiver.url), services),
            startWorker(workerEnv(database.url, 60_000)),
            startWorker(workerEnv(database.url, 60_000))
          ],
          { concurrency: "unbounded" }
        )
        yield* waitUntil(
          () => countBy(receiver.received).size >= EVENTS,
          60_000,
          () => String(countBy(receiver.received).size)
        )
        const stored = yield* Effect.provide(settled, services)
        // A little longer: a second delivery of anything would arrive now.
        yield* Effect.sleep(Duration.millis(500))
        expect(stored.eventIds).toHaveLength(EVENTS)
        expect([...countBy(receiver.received).keys()].sort()).toEqual(stored.eventIds)
        expect(receiver.received).toHaveLength(EVENTS)
        expect(stored.attempts).toEqual({ succeeded: EVENTS })
        expectVerified(receiver.received, endpoint.secret)
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    `after SIGKILL of one worker mid-run every event still arrives, duplicates with the same webhook-id`,
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        // Slow answers keep attempts in flight, so the killed worker dies holding some.
        const receiver = yield* slowReceiver(25)
        const leaseMs = 2_000
        const [victim] = yield* Effect.all(
          [startWorker(workerEnv(database.url, leaseMs)), startWorker(workerEnv(database.url, leaseMs))],
          { concurrency: "unbounded" }
        )
        const services = yield* Layer.build(useCasesOn(database.url))
        const created = yield* Effect.fork(Effect.provide(createEvents(receiver.url), services))
        yield* waitUntil(() => receiver.received.length >= EVENTS / 4, 30_000)
        killNow(victim.child)
        const receivedAtKill = countBy(receiver.received).size
        const endpoint = yield* created
        yield* waitUntil(
          () => countBy(receiver.received).size >= EVENTS,
          60_000,
          () => String(countBy(receiver.received).size)
        )
        const stored = yield* Effect.provide(settled, services)
        expect(receivedAtKill).toBeLessThan(EVENTS)
        expect([...countBy(receiver.received).keys()].sort()).toEqual(stored.eventIds)
        expect(stored.eventIds).toHaveLength(EVENTS)
        // One attempt per event in the log, each finished: a re-sent claim is the same attempt.
        expect(stored.attempts).toEqual({ succeeded: EVENTS })
        expectVerified(receiver.received, endpoint.secret)
        const duplicates = receiver.received.length - EVENTS
        console.info(`after the kill: ${duplicates} duplicate deliveries, each with its event's webhook-id`)
      }).pipe(Effect.scoped),
    180_000
  )
})
