/**
 * The traces' variables as an operator sets them (docs/operations.md, Traces): none set, no
 * tracing; the general endpoint gets /v1/traces, the traces endpoint is used as it is; the
 * protocol is OTLP over HTTP only. And the W3C traceparent the server continues.
 */
import { describe, expect, it } from "@effect/vitest"
import { TraceContext } from "@intake/domain"
import { ConfigProvider, Effect, Either, Option } from "effect"
import { tracingConfig } from "../src/tracing-config.js"

const read = (env: Record<string, string>) =>
  Effect.withConfigProvider(
    Effect.either(tracingConfig("intake-test")),
    ConfigProvider.fromMap(new Map(Object.entries(env)))
  )

describe("tracingConfig", () => {
  it.effect("unset (or blank): no tracing", () =>
    Effect.gen(function* () {
      expect(yield* read({})).toEqual(Either.right(Option.none()))
      // A protocol meant for another program fails nothing while no endpoint is set.
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: " ", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toEqual(
        Either.right(Option.none())
      )
    })
  )

  it.effect("the general endpoint gets /v1/traces; protobuf and the process's name by default", () =>
    Effect.gen(function* () {
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" })).toEqual(
        Either.right(
          Option.some({
            url: "http://127.0.0.1:4318/v1/traces",
            protocol: "http/protobuf",
            serviceName: "intake-test",
            sampleRatio: 1
          })
        )
      )
    })
  )

  it.effect(
    "the traces endpoint wins and is used as given; OTEL_SERVICE_NAME and http/json are honoured",
    () =>
      Effect.gen(function* () {
        expect(
          yield* read({
            OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9999/custom",
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
            OTEL_SERVICE_NAME: "intake-eu-1"
          })
        ).toEqual(
          Either.right(
            Option.some({
              url: "http://127.0.0.1:9999/custom",
              protocol: "http/json",
              serviceName: "intake-eu-1",
              sampleRatio: 1
            })
          )
        )
      })
  )

  it.effect("OTEL_TRACES_SAMPLER and its ratio: the share of new traces recorded", () =>
    Effect.gen(function* () {
      const ratio = (env: Record<string, string>) =>
        Effect.map(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", ...env }), (result) =>
          Either.map(
            result,
            Option.map((config) => config.sampleRatio)
          )
        )
      expect(yield* ratio({})).toEqual(Either.right(Option.some(1)))
      expect(
        yield* ratio({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.05" })
      ).toEqual(Either.right(Option.some(0.05)))
      expect(yield* ratio({ OTEL_TRACES_SAMPLER: "always_off" })).toEqual(Either.right(Option.some(0)))
      for (const wrong of [
        { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" },
        { OTEL_TRACES_SAMPLER: "jaeger_remote" }
      ]) {
        const result = yield* ratio(wrong)
        expect(Either.isLeft(result)).toBe(true)
        expect(String(Either.isLeft(result) ? result.left : "")).toContain("OTEL_TRACES_SAMPLER")
      }
    })
  )

  it.effect("gRPC is refused at start, naming the variable", () =>
    Effect.gen(function* () {
      const result = yield* read({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4317",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"
      })
      expect(Either.isLeft(result)).toBe(true)
      expect(String(Either.isLeft(result) ? result.left : "")).toContain("OTEL_EXPORTER_OTLP_PROTOCOL")
    })
  )
})

describe("TraceContext.parseTraceParent", () => {
  it("continues a well-formed traceparent, and formats a span back to one", () => {
    const parent = TraceContext.parseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    expect(Option.map(parent, (span) => [span.traceId, span.spanId, span.sampled])).toEqual(
      Option.some(["4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true])
    )
    expect(Option.map(parent, TraceContext.formatTraceParent)).toEqual(
      Option.some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    )
  })

  it("ignores anything else: all-zero ids, another version, upper case, a list, nothing", () => {
    for (const given of [
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${"0".repeat(16)}-01`,
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
      undefined
    ])
      expect(Option.isNone(TraceContext.parseTraceParent(given))).toBe(true)
  })
})
