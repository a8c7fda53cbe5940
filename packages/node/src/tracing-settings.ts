/**
 * What the traces exporter is given (docs/operations.md, Traces): read from the variables by
 * tracing-config.ts, used by tracing.ts, which is loaded only when an endpoint is set. A file
 * of its own, so neither imports the other for it.
 */
import type { Duration } from "effect"

export interface TracingConfig {
  /** Where spans are POSTed: the traces endpoint as given, or the endpoint with /v1/traces. */
  readonly url: string
  /** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: http/protobuf (the default) or http/json. */
  readonly protocol: "http/protobuf" | "http/json"
  /** OTEL_SERVICE_NAME, else the process's own (intake-server, intake-worker). */
  readonly serviceName: string
  /**
   * OTEL_TRACES_SAMPLER(_ARG): the share of the traces started here that are recorded (1 by
   * default); a request that continues a caller's trace follows the caller's sampled flag.
   */
  readonly sampleRatio: number
  /** How often a batch of ended spans is sent (5 s by default; a full batch goes at once). */
  readonly exportInterval?: Duration.DurationInput
}
