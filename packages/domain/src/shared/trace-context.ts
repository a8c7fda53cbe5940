/**
 * Traces (docs/operations.md, Traces): whether this process exports spans, and the W3C
 * `traceparent` text a request's span is carried in, from the request that continues a
 * caller's trace to the events it raises and their delivery attempts.
 *
 * Off by default, and then nothing on the hot path changes: the server, the statements on
 * `pg` and the dispatcher look for `Tracing` once, when they are built, and add their spans
 * only where it is present.
 */
import { Context, Option, Tracer } from "effect"

/**
 * Present when spans are exported (OTEL_EXPORTER_OTLP_ENDPOINT). The tracing layer also turns
 * Effect's tracer off by default, so that background work (polls, purges, the database
 * watcher) records nothing: a request and a delivery attempt turn it back on, when sampled.
 * `sampleRatio` (OTEL_TRACES_SAMPLER_ARG): the share of the traces that start here that are
 * recorded; a trace continued from a caller follows the caller's sampled flag.
 */
export class Tracing extends Context.Tag("@intake/Tracing")<Tracing, { readonly sampleRatio: number }>() {}

/**
 * Whether a span is recorded (parent-based sampling): as its parent says when it has one,
 * else with the probability `sampleRatio`.
 */
export const sampled = (parent: Option.Option<Tracer.ExternalSpan>, sampleRatio: number) =>
  Option.isSome(parent) ? parent.value.sampled : sampleRatio >= 1 || Math.random() < sampleRatio

/** `version-traceid-parentid-flags`, version 00 (W3C Trace Context); ids in lowercase hex, not all zeros. */
const TRACE_PARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = "0".repeat(32)
const ZERO_SPAN = "0".repeat(16)

/** The span a well-formed `traceparent` names, to continue; none for any other text. */
export const parseTraceParent = (value: string | ReadonlyArray<string> | undefined) => {
  if (typeof value !== "string") return Option.none<Tracer.ExternalSpan>()
  const found = TRACE_PARENT.exec(value.trim())
  if (found === null || found[1] === ZERO_TRACE || found[2] === ZERO_SPAN)
    return Option.none<Tracer.ExternalSpan>()
  return Option.some(
    Tracer.externalSpan({
      traceId: found[1]!,
      spanId: found[2]!,
      sampled: (Number.parseInt(found[3]!, 16) & 1) === 1
    })
  )
}

/** A span as a `traceparent` value: what a create keeps with its events. */
export const formatTraceParent = (span: {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}) => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
