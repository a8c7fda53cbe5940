/**
 * The traces' protobuf (docs/operations.md, Traces): otlp-protobuf.ts writes the bytes
 * @effect/opentelemetry's own encoder writes, for every kind of field a span can carry.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeTraces, type TracesData } from "../src/otlp-protobuf.js"

const libraryBytes = (data: TracesData) =>
  Effect.provide(
    Effect.map(OtlpSerialization.OtlpSerialization, (serialization) => {
      const body = serialization.traces(data as never)
      if (body._tag !== "Uint8Array") throw new Error(`not bytes: ${body._tag}`)
      return body.body
    }),
    OtlpSerialization.layerProtobuf
  )

const span = (overrides: Record<string, unknown> = {}) => ({
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  name: "POST /v1/intake-bots/:id/submissions",
  kind: 2,
  startTimeUnixNano: "1795831136977034361",
  endTimeUnixNano: "1795831137020631021",
  attributes: [
    { key: "http.request.method", value: { stringValue: "POST" } },
    { key: "http.response.status_code", value: { intValue: 201 } },
    { key: "db.query.text", value: { stringValue: "SELECT é, ü FROM t WHERE id = $1 -- ✓ ".repeat(20) } }
  ],
  droppedAttributesCount: 0,
  events: [],
  droppedEventsCount: 0,
  status: { code: 1 },
  links: [],
  droppedLinksCount: 0,
  ...overrides
})

const data = (spans: ReadonlyArray<ReturnType<typeof span>>): TracesData => ({
  resourceSpans: [
    {
      resource: {
        attributes: [
          { key: "service.name", value: { stringValue: "intake-server" } },
          { key: "process.pid", value: { intValue: 4242 } }
        ],
        droppedAttributesCount: 0
      },
      scopeSpans: [{ scope: { name: "intake-server" }, spans }]
    }
  ]
})

describe("encodeTraces", () => {
  it.effect(
    "writes what @effect/opentelemetry writes: a batch of request, operation and statement spans",
    () =>
      Effect.gen(function* () {
        const batch = data([
          span(),
          span({
            spanId: "1111111111111111",
            parentSpanId: "00f067aa0ba902b7",
            name: "createSubmission",
            kind: 1
          }),
          span({ spanId: "2222222222222222", parentSpanId: "1111111111111111", name: "sql insert", kind: 3 })
        ])
        expect(Buffer.from(encodeTraces(batch))).toEqual(Buffer.from(yield* libraryBytes(batch)))
      })
  )

  it.effect(
    "and every other field: a failed span's status and exception event, links, flags, numbers, lists",
    () =>
      Effect.gen(function* () {
        const batch = data([
          span({
            attributes: [
              { key: "ratio", value: { doubleValue: 0.25 } },
              { key: "big", value: { intValue: 2 ** 40 + 3 } },
              { key: "zero", value: { intValue: 0 } },
              { key: "ok", value: { boolValue: false } },
              { key: "yes", value: { boolValue: true } },
              { key: "list", value: { arrayValue: { values: [{ stringValue: "a" }, { intValue: 300 }] } } },
              { key: "map", value: { kvlistValue: { values: [{ key: "k", value: { stringValue: "v" } }] } } }
            ],
            droppedAttributesCount: 2,
            events: [
              {
                name: "exception",
                timeUnixNano: "1795831137020631021",
                attributes: [{ key: "exception.message", value: { stringValue: "boom" } }],
                droppedAttributesCount: 0
              }
            ],
            droppedEventsCount: 1,
            links: [
              {
                traceId: "0af7651916cd43dd8448eb211c80319c",
                spanId: "b7ad6b7169203331",
                attributes: [],
                droppedAttributesCount: 0
              }
            ],
            droppedLinksCount: 3,
            status: { code: 2, message: "StorageUnavailable: the database did not answer" }
          }),
          // A span of 300 attributes: lengths past one varint byte, at every level.
          span({
            attributes: Array.from({ length: 300 }, (_, i) => ({
              key: `k${i}`,
              value: { stringValue: "v".repeat(i) }
            }))
          })
        ])
        expect(Buffer.from(encodeTraces(batch))).toEqual(Buffer.from(yield* libraryBytes(batch)))
      })
  )
})
