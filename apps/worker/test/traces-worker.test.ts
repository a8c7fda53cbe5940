/**
 * Traces in a worker (docs/operations.md, Traces), as a process test: with
 * OTEL_EXPORTER_OTLP_ENDPOINT set, each delivery attempt is a span sent to the collector,
 * a child of the span of the request that raised its event (its traceparent kept on the
 * event), with the endpoint, the event, the outcome and the receiver's status.
 */
import { expect, it } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { otlpCollector, spanAttribute } from "@intake/testing"
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

const TRACE = "0af7651916cd43dd8448eb211c80319c"
const REQUEST_SPAN = "b7ad6b7169203331"

describePostgres("worker traces", () => {
  it.live(
    "an attempt is a span of the trace of the request that raised its event",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const receiver = yield* slowReceiver(0)
        const collector = yield* otlpCollector
        const services = yield* Layer.build(useCasesOn(database.url))
        yield* startWorker(
          workerEnv(database.url, {
            OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"
          })
        )
        const { bot, endpoint } = yield* Effect.provide(givenEndpoint(receiver.url), services)
        const [event] = yield* Effect.provide(
          recordEvents(bot, 1, { traceParent: `00-${TRACE}-${REQUEST_SPAN}-01` }),
          services
        )
        // Spans go in batches every 5 s.
        yield* waitUntil(
          () => collector.spans.some((span) => span.name === "webhook attempt"),
          30_000,
          () => JSON.stringify(collector.spans.map((span) => span.name))
        )
        const attempt = collector.spans.find((span) => span.name === "webhook attempt")!
        expect(attempt.traceId).toBe(TRACE)
        expect(attempt.parentSpanId).toBe(REQUEST_SPAN)
        expect(spanAttribute(attempt, "intake.webhook_id")).toBe(endpoint.id)
        expect(spanAttribute(attempt, "intake.event_id")).toBe(event!.id)
        expect(spanAttribute(attempt, "intake.outcome")).toBe("succeeded")
        expect(spanAttribute(attempt, "http.response.status_code")).toBeGreaterThanOrEqual(200)
        expect([...collector.services]).toEqual(["intake-worker"])
        // The dispatcher's polls and the purges send nothing: every span is an attempt's or beneath one.
        for (const span of collector.spans) expect(span.traceId).toBe(TRACE)
      }).pipe(Effect.scoped),
    120_000
  )
})
