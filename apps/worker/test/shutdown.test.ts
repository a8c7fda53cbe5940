/**
 * SIGTERM (a supervisor) or SIGINT (Ctrl-C) to a worker process (`src/main.ts`, as
 * `pnpm start` runs it) while a receiver holds its answer: the worker waits for the
 * answer and records the attempt, claims nothing more, and exits 0 within its bound; what
 * it did not claim stays queued for the next worker.
 */
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { DeliveryRepository, Webhooks } from "@intake/domain"
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

/** How long the receiver holds its answer. */
const HOLD_MS = 2_000
/** The worker's bound: an attempt in flight ends within the receiver time limit (10 s). */
const EXIT_WITHIN_MS = 10_000

describePostgres("a worker process told to stop", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it.live(
      `${signal} during a slow delivery: the attempt finishes and is recorded, nothing more is claimed, exit 0`,
      () =>
        Effect.gen(function* () {
          const database = yield* freshDatabaseUrl()
          const receiver = yield* slowReceiver(HOLD_MS)
          const services = yield* Layer.build(useCasesOn(database.url))
          const { bot, endpoint } = yield* Effect.provide(givenEndpoint(receiver.url), services)
          // Free slots and a short poll: a worker still claiming would take anything due at once.
          const worker = yield* startWorker(
            workerEnv(database.url, { WEBHOOK_POLL_INTERVAL: "100ms", WEBHOOK_DISPATCH_CONCURRENCY: "8" })
          )
          const exited = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) =>
            worker.child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() }))
          )

          const [inFlight] = yield* Effect.provide(recordEvents(bot, 1), services)
          yield* waitUntil(() => receiver.received.length > 0, 10_000, worker.output)
          // Due while the worker still waits for the receiver: it must leave this one alone.
          const [scheduled] = yield* Effect.provide(recordEvents(bot, 1, { dueInMs: 1_000 }), services)
          const signalledAt = performance.now()
          worker.child.kill(signal)
          // Recorded (with its wake-up) while the worker finishes; the pause lets the signal land first.
          yield* Effect.sleep("300 millis")
          const [late] = yield* Effect.provide(recordEvents(bot, 1), services)

          const exit = yield* Effect.promise(() => exited).pipe(
            Effect.timeoutFail({
              duration: EXIT_WITHIN_MS + 5_000,
              onTimeout: () => new Error(`the worker did not exit after ${signal}: ${worker.output()}`)
            })
          )
          expect({ code: exit.code, signal: exit.signal }, worker.output()).toEqual({ code: 0, signal: null })
          expect(exit.at - signalledAt).toBeLessThan(EXIT_WITHIN_MS)

          // The receiver got its one request and answered it; the worker recorded the answer.
          expect(receiver.received.map((request) => request.eventId)).toEqual([inFlight!.id])
          expect(receiver.answered).toEqual([inFlight!.id])
          const stored = yield* Effect.provide(
            Effect.gen(function* () {
              const deliveries = yield* DeliveryRepository
              return {
                attempts: yield* deliveries.attemptsOf(endpoint.id, inFlight!.id),
                endpoint: yield* (yield* Webhooks).get(bot.workspaceId, endpoint.id),
                // The next worker's claim: both events the stopping worker left are due and free.
                nextClaim: yield* deliveries.claimDue(Date.now(), 10, 60_000, "next-worker")
              }
            }),
            services
          )
          expect(stored.attempts.map(({ status, responseStatus }) => ({ status, responseStatus }))).toEqual([
            { status: "succeeded", responseStatus: 204 }
          ])
          expect(stored.endpoint.lastDeliveryOk).toBe(true)
          expect(stored.nextClaim.map((delivery) => delivery.eventId).sort()).toEqual(
            [scheduled!.id, late!.id].sort()
          )
          expect(stored.nextClaim.every((delivery) => delivery.status === "pending")).toBe(true)
        }).pipe(Effect.scoped),
      60_000
    )
  }
})
