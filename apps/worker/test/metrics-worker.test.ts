/**
 * The worker's metrics (docs/operations.md, Metrics), as a process test: GET /metrics on
 * WORKER_METRICS_PORT (a free one here), behind INTAKE_METRICS_TOKEN, counts the
 * deliveries the worker made and reads the queue and the pool at scrape time.
 */
import { expect, it } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { Effect, Layer } from "effect"
import {
  describePostgres,
  givenEndpoint,
  recordEvents,
  slowReceiver,
  startWorker,
  useCasesOn,
  waitUntil,
  workerEnv
} from "./processes.js"

const TOKEN = "worker-metrics-token"

const get = (url: string, token?: string) =>
  Effect.promise(async () => {
    const response = await fetch(
      url,
      token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }
    )
    return { status: response.status, text: await response.text() }
  })

/** The value of the sample written exactly as `series` (name and labels), if any. */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describePostgres("worker metrics", () => {
  it.live(
    "GET /metrics on WORKER_METRICS_PORT counts deliveries and reads the queue and the pool, behind the token",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const receiver = yield* slowReceiver(0)
        const services = yield* Layer.build(useCasesOn(database.url))
        const worker = yield* startWorker(
          workerEnv(database.url, { WORKER_METRICS_PORT: "0", INTAKE_METRICS_TOKEN: TOKEN })
        )
        const url = /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(worker.output())?.[1]
        expect(url, worker.output()).toBeDefined()
        expect((yield* get(url!)).status).toBe(401)
        expect((yield* get(url!, "another-token")).status).toBe(401)
        expect((yield* get(url!.replace("/metrics", "/other"), TOKEN)).status).toBe(404)

        const { bot } = yield* Effect.provide(givenEndpoint(receiver.url), services)
        yield* Effect.provide(recordEvents(bot, 3), services)
        let text = ""
        yield* waitUntil(
          () => sample(text, 'intake_webhook_deliveries_total{outcome="succeeded"}') === 3,
          30_000,
          () => text
        ).pipe(
          Effect.raceFirst(
            Effect.forever(
              Effect.zipRight(
                Effect.map(get(url!, TOKEN), (answer) => {
                  text = answer.text
                }),
                Effect.sleep("100 millis")
              )
            )
          )
        )
        expect(sample(text, "intake_webhook_delivery_duration_seconds_count")).toBe(3)
        expect(sample(text, 'intake_db_pool_connections{state="total"}')).toBeGreaterThanOrEqual(1)
        expect(sample(text, 'intake_db_pool_connections{state="waiting"}')).toBe(0)
        expect(sample(text, "intake_webhook_circuits_open")).toBe(0)
        // Read from the queue (NaN when the read fails): the attempts may still be written down.
        expect(Number.isFinite(sample(text, "intake_webhook_backlog"))).toBe(true)
        expect(text).toContain("process_cpu_user_seconds_total")
      }).pipe(Effect.scoped),
    120_000
  )
})
