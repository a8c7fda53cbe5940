/**
 * Traces (docs/operations.md, Traces) over a real socket, into a loopback OTLP/HTTP receiver
 * (JSON encoding): a create that carries a `traceparent` continues that trace, with its
 * operation and its statements beneath it, and the delivery attempt of the event it raised
 * is a span of the same trace. With traces off, a create records no span at all.
 */
import { expect, layer } from "@effect/vitest"
import { PostgresTestDatabase } from "@intake/postgres/testing"
import { type OtlpCollector, otlpCollector, spanAttribute } from "@intake/testing"
import { Effect, Layer, Option, Tracer } from "effect"
import { embeddedRuntime, sqlRuntime } from "../src/runtime.js"
import { BaseUrl, call, testServer } from "./harness.js"
import { eventually, localReceiver } from "./receiver.js"
import { dataOf, provision } from "./support.js"

/** The collector's address, for the server's layer (built before the test runs). */
class Collector extends Effect.Tag("test/Collector")<Collector, OtlpCollector>() {}

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const CALLER_SPAN = "00f067aa0ba902b7"

const submitWithTrace = (baseUrl: string, tenant: { key: string; botId: string }, traceparent: string) =>
  call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
    key: tenant.key,
    headers: { traceparent },
    body: { data: { name: "Ada", email: "ada@example.com" } }
  })

// On PostgreSQL, where the statements go on `pg` directly and are spans of ours.
const traced = Layer.unwrapEffect(
  Effect.map(Collector, (collector) =>
    testServer(
      sqlRuntime(PostgresTestDatabase(), "PostgreSQL", {
        webhookAllowPrivateNetworks: true,
        dispatcher: { pollIntervalMs: 100 },
        tracing: Option.some({
          url: `${collector.url}/v1/traces`,
          protocol: "http/json" as const,
          serviceName: "intake-traces-test",
          sampleRatio: 1,
          exportInterval: "50 millis"
        })
      })
    )
  )
).pipe(Layer.provideMerge(Layer.scoped(Collector, otlpCollector)))

layer(traced, { excludeTestServices: true, timeout: 60_000 })("traces on", (it) => {
  it.scoped(
    "a create continues the caller's trace, with its operation and statements beneath it, and its delivery shares the trace",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const collector = yield* Collector
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver([200])
        const webhook = dataOf(
          yield* call(baseUrl, "POST", "/v1/webhooks", {
            key: tenant.key,
            body: { url: receiver.url, events: ["submission.completed"] }
          })
        ).webhook
        const created = dataOf(
          yield* submitWithTrace(baseUrl, tenant, `00-${CALLER_TRACE}-${CALLER_SPAN}-01`),
          201
        )
        yield* eventually(() => receiver.received.length === 1)
        const inTrace = () => collector.spans.filter((span) => span.traceId === CALLER_TRACE)
        yield* eventually(() => inTrace().some((span) => span.name === "webhook attempt"), 10_000)
        const spans = inTrace()
        expect([...collector.services]).toEqual(["intake-traces-test"])

        // The request: a server span, child of the caller's span.
        const request = spans.find((span) => span.name === "POST /v1/intake-bots/:id/submissions")
        expect(request, JSON.stringify(spans.map((s) => s.name))).toBeDefined()
        expect(request!.parentSpanId).toBe(CALLER_SPAN)
        expect(request!.kind).toBe(2) // server
        expect(spanAttribute(request!, "http.response.status_code")).toBe(201)
        expect(spanAttribute(request!, "http.route")).toBe("/v1/intake-bots/:id/submissions")
        expect(spanAttribute(request!, "intake.submission_id")).toBe(created.submission.id)

        // The operation beneath it, and the statements beneath the operation (names and texts, never values).
        const operation = spans.find((span) => span.name === "createSubmission")
        expect(operation?.parentSpanId).toBe(request!.spanId)
        const statements = spans.filter((span) => span.parentSpanId === operation!.spanId && span.kind === 3)
        expect(statements.length).toBeGreaterThan(0)
        for (const statement of statements) {
          expect(spanAttribute(statement, "db.system.name")).toBe("postgresql")
          expect(String(spanAttribute(statement, "db.query.text") ?? "")).not.toContain("ada@example.com")
        }
        // The request's own statements (the key's lookup, the rate limit) are beneath it too.
        expect(JSON.stringify(spans)).not.toContain("ada@example.com")

        // The delivery: a span of the same trace, beneath the request's, naming what it sent.
        const attempt = spans.find((span) => span.name === "webhook attempt")!
        expect(attempt.parentSpanId).toBe(request!.spanId)
        expect(spanAttribute(attempt, "intake.webhook_id")).toBe(webhook.id)
        expect(spanAttribute(attempt, "intake.event_id")).toBe(receiver.received[0]!.payload.id)
        expect(spanAttribute(attempt, "intake.outcome")).toBe("succeeded")
        expect(spanAttribute(attempt, "http.response.status_code")).toBe(200)
        expect(spanAttribute(attempt, "intake.request_id")).toBe(spanAttribute(request!, "intake.request_id"))
        // The delivery to the receiver carries no trace header of ours.
        expect(receiver.received[0]!.headers.traceparent).toBeUndefined()
      })
  )

  it.scoped("a caller's trace that is not sampled (flags 00) is not recorded, nor kept with the events", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const collector = yield* Collector
      const tenant = yield* provision(baseUrl)
      const unsampled = "5bf92f3577b34da6a3ce929d0e0e4737"
      dataOf(yield* submitWithTrace(baseUrl, tenant, `00-${unsampled}-${CALLER_SPAN}-00`), 201)
      // A sampled create after it: once its span is in, the one before would be too.
      const after = dataOf(
        yield* submitWithTrace(baseUrl, tenant, `00-${CALLER_TRACE}-${CALLER_SPAN}-01`),
        201
      )
      yield* eventually(
        () =>
          collector.spans.some((span) => spanAttribute(span, "intake.submission_id") === after.submission.id),
        10_000
      )
      expect(collector.spans.filter((span) => span.traceId === unsampled)).toEqual([])
    })
  )

  it.scoped("a malformed traceparent starts a trace of its own", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const collector = yield* Collector
      const tenant = yield* provision(baseUrl)
      const answer = yield* submitWithTrace(baseUrl, tenant, `00-${"0".repeat(32)}-${CALLER_SPAN}-01`)
      const id = dataOf(answer, 201).submission.id
      const mine = () =>
        collector.spans.find(
          (span) => span.kind === 2 && span.attributes.some((a) => a.value.stringValue === id)
        )
      yield* eventually(() => mine() !== undefined, 10_000)
      expect(mine()!.traceId).not.toBe("0".repeat(32))
      expect(mine()!.traceId).toMatch(/^[0-9a-f]{32}$/)
      expect(mine()!.parentSpanId ?? "").toBe("")
    })
  )
})

/** An Effect tracer that keeps the name of every span begun: with traces off, none is. */
const begun: Array<string> = []
const native = Effect.runSync(Effect.tracer)
const recording = Tracer.make({
  span: (name, parent, context, links, startTime, kind, options) => {
    begun.push(name)
    return native.span(name, parent, context, links, startTime, kind, options)
  },
  context: native.context
})

const untraced = testServer(embeddedRuntime({ webhookAllowPrivateNetworks: true })).pipe(
  Layer.provide(Layer.setTracer(recording))
)

layer(untraced, { excludeTestServices: true })("traces off", (it) => {
  it.scoped("a create with a traceparent begins no span: nothing of tracing is on the path", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      begun.length = 0
      dataOf(yield* submitWithTrace(baseUrl, tenant, `00-${CALLER_TRACE}-${CALLER_SPAN}-01`), 201)
      expect(begun).toEqual([])
    })
  )
})
