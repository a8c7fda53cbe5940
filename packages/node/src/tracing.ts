/**
 * Traces over OTLP/HTTP (docs/operations.md, Traces): Effect's spans go to the collector
 * through @effect/opentelemetry's OtlpTracer (batched, every few seconds, protobuf or JSON),
 * with no OpenTelemetry SDK in the process. Imported dynamically by tracing-config.ts, only
 * when an endpoint is configured: a process without traces never loads this module.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { TraceContext } from "@intake/domain"
import { Effect, Layer } from "effect"
import { tracesBody } from "./otlp-protobuf.js"
import type { TracingConfig } from "./tracing-settings.js"

/**
 * Protobuf as @effect/opentelemetry sends it, the traces written by otlp-protobuf.ts: the
 * same bytes for a fraction of the CPU.
 */
const protobufSerialization = Layer.effect(
  OtlpSerialization.OtlpSerialization,
  Effect.map(OtlpSerialization.OtlpSerialization, (library) => ({ ...library, traces: tracesBody }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))

/**
 * Spans exported to `config.url`, and TraceContext.Tracing for the parts that add their
 * own. Effect's tracer is off by default under this layer: only a request's fiber and a
 * delivery attempt turn it on, so background work (polls, purges, the database watcher)
 * sends nothing. Closing the layer sends the spans still buffered (within 3 s).
 */
export const otlpTracingLayer = (config: TracingConfig): Layer.Layer<TraceContext.Tracing> =>
  Layer.mergeAll(
    OtlpTracer.layer({
      url: config.url,
      resource: { serviceName: config.serviceName },
      ...(config.exportInterval === undefined ? {} : { exportInterval: config.exportInterval })
    }),
    Layer.setTracerEnabled(false),
    Layer.succeed(TraceContext.Tracing, { sampleRatio: config.sampleRatio })
  ).pipe(
    Layer.provide(
      Layer.merge(
        FetchHttpClient.layer,
        config.protocol === "http/json" ? OtlpSerialization.layerJson : protobufSerialization
      )
    )
  )
