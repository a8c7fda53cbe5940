/**
 * Traces' configuration (docs/operations.md, Traces): with OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, Effect's spans go to that collector over
 * OTLP/HTTP. The exporter (tracing.ts, with @effect/opentelemetry) is loaded only then:
 * unset, no exporter module is loaded, no layer built, and the request path is the one
 * without tracing.
 */
import type { TraceContext } from "@intake/domain"
import { Config, ConfigError, type Duration, Effect, Either, Layer, Option } from "effect"

export interface TracingConfig {
  /** Where spans are POSTed: the traces endpoint as given, or the endpoint with /v1/traces. */
  readonly url: string
  /** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: http/protobuf (the default) or http/json. */
  readonly protocol: "http/protobuf" | "http/json"
  /** OTEL_SERVICE_NAME, else the process's own (intake-server, intake-worker). */
  readonly serviceName: string
  /** How often a batch of ended spans is sent (5 s by default; a full batch goes at once). */
  readonly exportInterval?: Duration.DurationInput
}

const nonEmpty = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

const PROTOCOLS = ["http/protobuf", "http/json"] as const

/**
 * The traces' configuration, none when neither endpoint variable is set (then the other
 * variables are not read: a protocol meant for another program fails nothing here). A
 * traces endpoint is used as it is; the general one gets /v1/traces appended (the OTLP
 * exporter convention). The protocol is OTLP over HTTP, protobuf unless http/json is asked.
 */
export const tracingConfig = (defaultServiceName: string): Config.Config<Option.Option<TracingConfig>> =>
  Config.all({
    traces: nonEmpty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    base: nonEmpty("OTEL_EXPORTER_OTLP_ENDPOINT"),
    tracesProtocol: nonEmpty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    protocol: nonEmpty("OTEL_EXPORTER_OTLP_PROTOCOL"),
    serviceName: nonEmpty("OTEL_SERVICE_NAME")
  }).pipe(
    Config.mapOrFail(({ traces, base, tracesProtocol, protocol, serviceName }) => {
      const url = Option.orElse(
        Option.map(traces, (given) => given.trim()),
        () => Option.map(base, (given) => `${given.trim().replace(/\/+$/, "")}/v1/traces`)
      )
      if (Option.isNone(url)) return Either.right(Option.none())
      const asked = Option.getOrElse(
        Option.orElse(tracesProtocol, () => protocol),
        () => "http/protobuf"
      ).trim()
      if (!(PROTOCOLS as ReadonlyArray<string>).includes(asked))
        return Either.left(
          ConfigError.InvalidData(
            [
              Option.isSome(tracesProtocol)
                ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
                : "OTEL_EXPORTER_OTLP_PROTOCOL"
            ],
            `must be one of ${PROTOCOLS.join(", ")} (OTLP over HTTP; gRPC is not supported)`
          )
        )
      return Either.right(
        Option.some<TracingConfig>({
          url: url.value,
          protocol: asked as TracingConfig["protocol"],
          serviceName: Option.getOrElse(serviceName, () => defaultServiceName).trim()
        })
      )
    })
  )

/**
 * Spans exported as `config` says, and TraceContext.Tracing for the parts that add their
 * own (tracing.ts, loaded here and only here).
 */
export const tracingLayer = (config: TracingConfig): Layer.Layer<TraceContext.Tracing> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("./tracing.js")),
      ({ otlpTracingLayer }) => otlpTracingLayer(config)
    )
  )
