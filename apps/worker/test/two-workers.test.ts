/**
 * Two worker processes (`src/main.ts`, as `pnpm start` runs it) on one fresh PostgreSQL
 * database deliver 1,000 events to a local receiver: in normal operation every event
 * arrives exactly once; when one worker is killed with SIGKILL mid-run, every event still
 * arrives at least once, a duplicate carrying the same webhook-id as its first delivery.
 * This process creates the endpoint through the Webhooks use case and records the events
 * as the Submissions use case does (outbox and queued attempts in one unit of work, then
 * NOTIFY), on the same database.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { Duration, Effect, Layer } from "effect"
import { Webhook } from "standardwebhooks"
import {
  workerEnv as baseEnv,
  describePostgres,
  givenEndpoint,
  killNow,
  type Received,
  recordEvents,
  slowReceiver,
  startWorker,
  useCasesOn,
  waitUntil
} from "./processes.js"

const EVENTS = 1_000

/**
 * A workspace with one bot and one endpoint at `receiverUrl`, then EVENTS completed
 * submissions with their events, a hundred per unit of work to keep the test short.
 */
const createEvents = (receiverUrl: string) =>
  Effect.gen(function* () {
    const { bot, endpoint } = yield* givenEndpoint(receiverUrl)
    yield* Effect.forEach(Array.from({ length: EVENTS / 100 }), () => recordEvents(bot, 100), {
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

const workerEnv = (databaseUrl: string, leaseMs: number) =>
  baseEnv(databaseUrl, {
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
