/**
 * An OTLP/HTTP collector on 127.0.0.1 for the traces' tests (docs/operations.md, Traces): it
 * takes `POST /v1/traces` in OTLP's JSON encoding (the exporter's
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span, and the service names they
 * came from. Lives for the scope.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface OtlpAttribute {
  readonly key: string
  readonly value: { readonly stringValue?: string; readonly intValue?: string | number }
}

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpAttribute>
}

export interface OtlpCollector {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  readonly url: string
  readonly spans: Array<OtlpSpan>
  readonly services: Set<string>
}

/** A span's attribute as a string or a number; undefined when it has none of that name. */
export const spanAttribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue))
}

export const otlpCollector = Effect.acquireRelease(
  Effect.async<OtlpCollector & { readonly close: () => void }>((resume) => {
    const spans: Array<OtlpSpan> = []
    const services = new Set<string>()
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        if (request.method !== "POST" || request.url !== "/v1/traces") {
          response.writeHead(404).end()
          return
        }
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        for (const resourceSpans of body.resourceSpans ?? []) {
          for (const attribute of resourceSpans.resource?.attributes ?? [])
            if (attribute.key === "service.name") services.add(attribute.value.stringValue)
          for (const scopeSpans of resourceSpans.scopeSpans ?? []) spans.push(...(scopeSpans.spans ?? []))
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          spans,
          services,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })
      )
    )
  }),
  (collector) => Effect.sync(collector.close)
)
