/**
 * Isolation between endpoints (docs/webhooks.md, "Isolation"), as a process test: a worker
 * process (`src/main.ts`) on a fresh PostgreSQL database delivers to two endpoints of two
 * workspaces. Endpoint A hangs on every call until the worker's 10 s limit; endpoint B
 * answers at once. 500 events for each are recorded over twenty seconds (25 a second for
 * each endpoint, ten per unit of work), the way the Submissions use case records them. B's events arrive within a second of being created
 * (p99, printed) while A's wait their turn: at most the per-endpoint limit in flight,
 * then the circuit opens and one probe at a time goes; every A event stays queued,
 * nothing of it is dropped.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { Duration, Effect, Layer } from "effect"
import {
  describePostgres,
  givenEndpoint,
  type Received,
  recordEvents,
  slowReceiver,
  startWorker,
  useCasesOn,
  waitUntil,
  workerEnv
} from "./processes.js"

const EVENTS = 500
const WARM_UP = 10
const BATCH = 10
const BATCH_EVERY_MS = 400

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** The first arrival of each webhook-id. */
const firstArrivals = (received: ReadonlyArray<Received>) => {
  const first = new Map<string, number>()
  for (const request of received)
    if (!first.has(request.eventId)) first.set(request.eventId, request.receivedAt)
  return first
}

describePostgres("isolation: a hanging endpoint does not delay another", () => {
  it.live(
    `A hangs 10 s per call, B answers at once: ${EVENTS} events each, B's p99 under 1 s, A's events stay queued`,
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const hanging = yield* slowReceiver(null)
        const quick = yield* slowReceiver(0)
        const services = yield* Layer.build(useCasesOn(database.url))
        const [a, b] = yield* Effect.provide(
          Effect.all([givenEndpoint(hanging.url), givenEndpoint(quick.url)]),
          services
        )
        // The defaults but a shorter circuit cool-down, so that A's probes show within the test.
        yield* startWorker(
          workerEnv(database.url, {
            WEBHOOK_CIRCUIT_COOLDOWN: "5s",
            WEBHOOK_CIRCUIT_COOLDOWN_MAX: "10s"
          })
        )
        // Warm-up, not measured: the worker's first deliveries load code and open connections.
        yield* Effect.provide(recordEvents(b.bot, WARM_UP), services)
        yield* waitUntil(
          () => quick.received.length >= WARM_UP,
          30_000,
          () => "warm-up"
        )
        const started = Date.now()
        const createdAt = new Map<string, number>()
        for (let round = 0; round < EVENTS / BATCH; round++) {
          const [forA, forB] = yield* Effect.provide(
            Effect.all([recordEvents(a.bot, BATCH), recordEvents(b.bot, BATCH)], {
              concurrency: 2
            }),
            services
          )
          for (const event of [...forA, ...forB]) createdAt.set(event.id, event.createdAt)
          yield* Effect.sleep(Duration.millis(BATCH_EVERY_MS))
        }
        yield* waitUntil(
          () => firstArrivals(quick.received).size >= WARM_UP + EVENTS,
          30_000,
          () => `B received ${firstArrivals(quick.received).size - WARM_UP} of ${EVENTS}`
        )
        const measured = [...firstArrivals(quick.received)].filter(([eventId]) => createdAt.has(eventId))
        const latencies = measured.map(([eventId, at]) => at - createdAt.get(eventId)!)
        const p50 = percentile(latencies, 50)
        const p99 = percentile(latencies, 99)
        const max = Math.max(...latencies)

        // A keeps being tried at its own pace: its first attempts time out after 10 s, the
        // circuit opens, and a probe goes when the cool-down (5 to 10 s here) ends.
        const firstA = hanging.received[0]!.receivedAt
        yield* waitUntil(
          () => hanging.received.some((request) => request.receivedAt >= firstA + 15_000),
          45_000,
          () => `A received ${hanging.received.length}, none after its circuit opened`
        )
        // The per-endpoint limit (default 8): no more than that before the first one timed out.
        const beforeFirstTimeout = hanging.received.filter((request) => request.receivedAt < firstA + 9_500)
        const elapsedS = (Date.now() - started) / 1000

        const sql = yield* Effect.provide(SqlClient.SqlClient, services)
        const [aState] = yield* sql<{
          queued_events: string
          failed: string
          dropped: string
          no_retry: string
        }>`
          SELECT
            (SELECT count(DISTINCT event_id) FROM deliveries WHERE webhook_id = ${a.endpoint.id} AND due_at IS NOT NULL) AS queued_events,
            (SELECT count(*) FROM deliveries WHERE webhook_id = ${a.endpoint.id} AND status = 'failed') AS failed,
            (SELECT count(*) FROM deliveries WHERE webhook_id = ${a.endpoint.id} AND error LIKE 'not sent%') AS dropped,
            (SELECT count(*) FROM deliveries WHERE webhook_id = ${a.endpoint.id} AND status = 'failed' AND next_retry_at IS NULL) AS no_retry`
        const [aEndpoint] = yield* sql<{ consecutive_fails: number; circuit_open_until: Date | null }>`
          SELECT consecutive_fails, circuit_open_until FROM webhook_endpoints WHERE id = ${a.endpoint.id}`
        const [bState] = yield* sql<{ succeeded: string }>`
          SELECT count(*) AS succeeded FROM deliveries WHERE webhook_id = ${b.endpoint.id} AND status = 'succeeded'`

        console.info(
          `isolation: B event-to-delivery p50 ${p50} ms, p99 ${p99} ms, max ${max} ms over ${latencies.length} events; ` +
            `A received ${hanging.received.length} calls in ${elapsedS.toFixed(1)} s ` +
            `(${(hanging.received.length / elapsedS).toFixed(2)}/s), ${aState!.failed} timed out, ` +
            `${aState!.queued_events} of ${EVENTS} events queued, circuit open until ${aEndpoint!.circuit_open_until?.toISOString()}`
        )
        expect(latencies).toHaveLength(EVENTS)
        expect(p99).toBeLessThan(1_000)
        expect(Number(bState!.succeeded)).toBe(WARM_UP + EVENTS)
        expect(beforeFirstTimeout.length).toBeLessThanOrEqual(8)
        // Every A event is still queued (a timed-out attempt has its retry queued); nothing dropped.
        expect(Number(aState!.queued_events)).toBe(EVENTS)
        expect(Number(aState!.dropped)).toBe(0)
        expect(Number(aState!.no_retry)).toBe(0)
        expect(Number(aState!.failed)).toBeGreaterThanOrEqual(8)
        expect(aEndpoint!.circuit_open_until).not.toBeNull()
      }).pipe(Effect.scoped),
    120_000
  )
})
