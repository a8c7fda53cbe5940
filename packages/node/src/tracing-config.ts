/**
 * Traces' configuration (docs/operations.md, Traces): with OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, Effect's spans go to that collector over
 * OTLP/HTTP. The exporter (tracing.ts, with @effect/opentelemetry) is loaded only then:
 * unset, no exporter module is loaded, no layer built, and the request path is the one
 * without tracing.
 */
import type { TraceContext } from "@intake/domain"
import { Config, ConfigError, Effect, Either, Layer, Option } from "effect"
import type { TracingConfig } from "./tracing-settings.js"

export type { TracingConfig } from "./tracing-settings.js"

const nonEmpty = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

const PROTOCOLS = ["http/protobuf", "http/json"] as const

/**
 * The share of new traces recorded, from OpenTelemetry's sampler variables: `always_on`,
 * `parentbased_always_on` (the default) 1; `always_off`, `parentbased_always_off` 0;
 * `traceidratio`, `parentbased_traceidratio` OTEL_TRACES_SAMPLER_ARG (0 to 1, default 1).
 * Every sampler here is parent-based: a caller's sampled flag decides for its trace.
 */
const sampleRatioOf = (
  sampler: Option.Option<string>,
  arg: Option.Option<string>
): Either.Either<number, ConfigError.ConfigError> => {
  const name = Option.getOrElse(sampler, () => "parentbased_always_on").trim()
  switch (name) {
    case "always_on":
    case "parentbased_always_on":
      return Either.right(1)
    case "always_off":
    case "parentbased_always_off":
      return Either.right(0)
    case "traceidratio":
    case "parentbased_traceidratio": {
      const ratio = Option.match(arg, { onNone: () => 1, onSome: (text) => Number(text.trim()) })
      return Number.isFinite(ratio) && ratio >= 0 && ratio <= 1
        ? Either.right(ratio)
        : Either.left(ConfigError.InvalidData(["OTEL_TRACES_SAMPLER_ARG"], "must be a number from 0 to 1"))
    }
    default:
      return Either.left(
        ConfigError.InvalidData(
          ["OTEL_TRACES_SAMPLER"],
          "must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
        )
      )
  }
}

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
    serviceName: nonEmpty("OTEL_SERVICE_NAME"),
    sampler: nonEmpty("OTEL_TRACES_SAMPLER"),
    samplerArg: nonEmpty("OTEL_TRACES_SAMPLER_ARG")
  }).pipe(
    Config.mapOrFail(({ traces, base, tracesProtocol, protocol, serviceName, sampler, samplerArg }) => {
      const url = Option.orElse(
        Option.map(traces, (given) => given.trim()),
        () => Option.map(base, (given) => `${given.trim().replace(/\/+$/, "")}/v1/traces`)
      )
      if (Option.isNone(url)) return Either.right(Option.none<TracingConfig>())
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
      const ratio = sampleRatioOf(sampler, samplerArg)
      if (Either.isLeft(ratio)) return Either.left(ratio.left)
      return Either.right(
        Option.some<TracingConfig>({
          url: url.value,
          protocol: asked as TracingConfig["protocol"],
          serviceName: Option.getOrElse(serviceName, () => defaultServiceName).trim(),
          sampleRatio: ratio.right
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
