/**
 * Traces over OTLP/HTTP, opt-in (docs/operations.md, Traces): with
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, Effect's spans go
 * to that collector through @effect/opentelemetry's OtlpTracer (batched, every few seconds,
 * protobuf or JSON), with no OpenTelemetry SDK in the process. Unset, no layer is built: no
 * exporter, no span, and the request path is the one without tracing.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { TraceContext } from "@intake/domain"
import { Config, ConfigError, type Duration, Either, Layer, Option } from "effect"

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
 * Spans exported to `config.url`, and TraceContext.Tracing for the parts that add their
 * own. Effect's tracer is off by default under this layer: only a request's fiber and a
 * delivery attempt turn it on, so background work (polls, purges, the database watcher)
 * sends nothing. Closing the layer sends the spans still buffered (within 3 s).
 */
export const tracingLayer = (config: TracingConfig): Layer.Layer<TraceContext.Tracing> =>
  Layer.mergeAll(
    OtlpTracer.layer({
      url: config.url,
      resource: { serviceName: config.serviceName },
      ...(config.exportInterval === undefined ? {} : { exportInterval: config.exportInterval })
    }),
    Layer.setTracerEnabled(false),
    Layer.succeed(TraceContext.Tracing, { enabled: true })
  ).pipe(
    Layer.provide(
      Layer.merge(
        FetchHttpClient.layer,
        config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
      )
    )
  )
