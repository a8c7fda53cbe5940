/**
 * Dispatcher wake-ups over LISTEN/NOTIFY when the listening connection is killed
 * (pg_terminate_backend, as a PostgreSQL restart or a failover would): they come back by
 * themselves, and the loss and the return are logged once each.
 */
import { performance } from "node:perf_hooks"
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { DeliveryWakeups } from "@intake/domain"
import { captureLogs } from "@intake/testing"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { DELIVERY_CHANNEL, PgDeliveryWakeups } from "../src/deliveries.js"
import { layerPostgres } from "../src/pg-pool.js"
import { freshDatabaseUrl } from "../src/testing.js"
import { describePostgres } from "./support.js"

/** The time from a NOTIFY to its wake-up, or none if it did not come within `withinMs`. */
const wakeUpLatency = (wakeups: DeliveryWakeups["Type"], withinMs: number) =>
  Effect.gen(function* () {
    const started = performance.now()
    yield* wakeups.notify
    const woken = yield* Effect.timeoutOption(wakeups.next, Duration.millis(withinMs))
    return Option.map(woken, () => performance.now() - started)
  })

describePostgres("delivery wake-ups on PostgreSQL", () => {
  it.scopedLive(
    "the listening connection killed: wake-ups come back within moments, the loss and the return logged once each",
    () => {
      const logs = captureLogs()
      return Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const context = yield* Layer.build(
          PgDeliveryWakeups.pipe(Layer.provideMerge(layerPostgres({ url: Redacted.make(database.url) })))
        )
        const wakeups = Context.get(context, DeliveryWakeups)
        const sql = Context.get(context, SqlClient.SqlClient)
        const listening = sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND query = ${`LISTEN "${DELIVERY_CHANNEL}"`} AND pid <> pg_backend_pid()`

        // Listening: a NOTIFY wakes at once.
        const first = yield* wakeUpLatency(wakeups, 200).pipe(
          Effect.repeat({ until: Option.isSome, times: 50 })
        )
        expect(Option.isSome(first)).toBe(true)
        const [listener] = yield* listening
        expect(listener).toBeDefined()

        yield* sql`SELECT pg_terminate_backend(${listener!.pid})`
        // Wake-ups come back by themselves, well within the dispatcher's poll interval (1 s).
        const killedAt = performance.now()
        let back = Option.none<number>()
        while (Option.isNone(back) && performance.now() - killedAt < 10_000)
          back = yield* wakeUpLatency(wakeups, 50)
        const recoveredMs = performance.now() - killedAt
        expect(Option.isSome(back)).toBe(true)
        expect(recoveredMs).toBeLessThan(2_000)
        const latencies = yield* Effect.forEach(Array.from({ length: 5 }), () =>
          wakeUpLatency(wakeups, 1_000)
        )
        for (const latency of latencies)
          expect(Option.getOrElse(latency, () => Number.POSITIVE_INFINITY)).toBeLessThan(200)
        const [relistened] = yield* listening
        expect(relistened!.pid).not.toBe(listener!.pid)

        expect(logs.texts("LISTEN")).toEqual([
          `WARN LISTEN ${DELIVERY_CHANNEL}: connection lost; notifications missed until it is back (trying again with backoff)`,
          `INFO LISTEN ${DELIVERY_CHANNEL}: listening again`
        ])
      }).pipe(Effect.provide(logs.layer))
    }
  )
})
