/**
 * OTLP traces in protobuf, written in one pass into one buffer (docs/operations.md, Traces).
 * The same bytes as @effect/opentelemetry's own encoder (OtlpSerialization.layerProtobuf),
 * which builds a small array per field and copies each message into its parent with BigInt
 * varints: with every request recorded, that encoding cost more CPU than the request's own
 * spans (docs/operations.md, Traces). Sizes are counted first, so each
 * length-delimited field is written once, in place.
 *
 * The messages are those of opentelemetry-proto (trace/v1, common/v1, resource/v1), as the
 * exporter hands them over: OtlpTracer's spans, resource and scope.
 */
import * as HttpBody from "@effect/platform/HttpBody"

interface AnyValue {
  readonly stringValue?: string | null
  readonly boolValue?: boolean | null
  readonly intValue?: number | null
  readonly doubleValue?: number | null
  readonly arrayValue?: { readonly values: ReadonlyArray<AnyValue> }
  readonly kvlistValue?: { readonly values: ReadonlyArray<KeyValue> }
  readonly bytesValue?: Uint8Array
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
interface Attributed {
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
}
interface Event extends Attributed {
  readonly timeUnixNano: string
  readonly name: string
}
interface Link extends Attributed {
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string
  readonly flags?: number
}
interface Span extends Attributed {
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string
  readonly parentSpanId?: string
  readonly flags?: number
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly events: ReadonlyArray<Event>
  readonly droppedEventsCount: number
  readonly links: ReadonlyArray<Link>
  readonly droppedLinksCount: number
  readonly status: { readonly code: number; readonly message?: string }
}
interface Scope {
  readonly name: string
  readonly version?: string
  readonly attributes?: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount?: number
}
interface ScopeSpans {
  readonly scope: Scope
  readonly spans: ReadonlyArray<Span>
  readonly schemaUrl?: string
}
interface ResourceSpans {
  readonly resource: Attributed
  readonly scopeSpans: ReadonlyArray<ScopeSpans>
  readonly schemaUrl?: string
}
export interface TracesData {
  readonly resourceSpans: ReadonlyArray<ResourceSpans>
}

// ------------------------------------------------------------------------ sizes

const varintSize = (value: number): number => {
  if (value < 0) return 10
  let size = 1
  while (value >= 128) {
    value = Math.floor(value / 128)
    size++
  }
  return size
}
/** A length-delimited field of `length` bytes, with a one-byte tag (field numbers below 16). */
const delimited = (length: number) => 1 + varintSize(length) + length
const stringSize = (value: string) => delimited(Buffer.byteLength(value, "utf8"))
const optionalString = (value: string | undefined) =>
  value === undefined || value === "" ? 0 : stringSize(value)
const countSize = (value: number | undefined) =>
  value !== undefined && value > 0 ? 1 + varintSize(value) : 0

const anyValueSize = (value: AnyValue): number => {
  if (value.stringValue !== undefined && value.stringValue !== null) return stringSize(value.stringValue)
  if (value.boolValue !== undefined && value.boolValue !== null) return 2
  if (value.intValue !== undefined && value.intValue !== null) return 1 + varintSize(value.intValue)
  if (value.doubleValue !== undefined && value.doubleValue !== null) return 9
  if (value.arrayValue !== undefined) return delimited(listSize(value.arrayValue.values, anyValueSize))
  if (value.kvlistValue !== undefined) return delimited(listSize(value.kvlistValue.values, keyValueSize))
  if (value.bytesValue !== undefined) return delimited(value.bytesValue.length)
  return 0
}
const keyValueSize = (kv: KeyValue) => stringSize(kv.key) + delimited(anyValueSize(kv.value))
/** The repeated message field of `items`, each one length-delimited. */
const listSize = <A>(items: ReadonlyArray<A>, size: (item: A) => number) => {
  let total = 0
  for (const item of items) total += delimited(size(item))
  return total
}
const idSize = (hex: string) => delimited(hex.length / 2)
const attributedSize = (message: Attributed) =>
  listSize(message.attributes, keyValueSize) + countSize(message.droppedAttributesCount)

const eventSize = (event: Event) => 9 + stringSize(event.name) + attributedSize(event)
const linkSize = (link: Link) =>
  idSize(link.traceId) +
  idSize(link.spanId) +
  optionalString(link.traceState) +
  attributedSize(link) +
  (link.flags !== undefined ? 5 : 0)
const statusSize = (status: Span["status"]) => optionalString(status.message) + 1 + varintSize(status.code)
const spanSize = (span: Span) =>
  idSize(span.traceId) +
  idSize(span.spanId) +
  optionalString(span.traceState) +
  (span.parentSpanId !== undefined ? idSize(span.parentSpanId) : 0) +
  stringSize(span.name) +
  1 +
  varintSize(span.kind) +
  18 +
  attributedSize(span) +
  listSize(span.events, eventSize) +
  countSize(span.droppedEventsCount) +
  listSize(span.links, linkSize) +
  countSize(span.droppedLinksCount) +
  delimited(statusSize(span.status)) +
  (span.flags !== undefined ? 6 : 0)
const scopeSize = (scope: Scope) =>
  stringSize(scope.name) +
  optionalString(scope.version) +
  (scope.attributes ? listSize(scope.attributes, keyValueSize) : 0) +
  countSize(scope.droppedAttributesCount)
const scopeSpansSize = (scopeSpans: ScopeSpans) =>
  delimited(scopeSize(scopeSpans.scope)) +
  listSize(scopeSpans.spans, spanSize) +
  optionalString(scopeSpans.schemaUrl)
const resourceSpansSize = (resourceSpans: ResourceSpans) =>
  delimited(attributedSize(resourceSpans.resource)) +
  listSize(resourceSpans.scopeSpans, scopeSpansSize) +
  optionalString(resourceSpans.schemaUrl)

// ------------------------------------------------------------------------ writing

class Writer {
  offset = 0
  constructor(readonly bytes: Buffer) {}
  byte(value: number) {
    this.bytes[this.offset++] = value
  }
  varint(value: number) {
    if (value < 0) {
      // Two's complement over 64 bits, as protobuf writes a negative int64.
      this.offset = this.bytes.writeBigUInt64LE(BigInt.asUintN(64, BigInt(value)), this.offset)
      return
    }
    while (value >= 128) {
      this.byte((value % 128) | 128)
      value = Math.floor(value / 128)
    }
    this.byte(value)
  }
  tag(field: number, wireType: number) {
    this.byte((field << 3) | wireType)
  }
  /** A length-delimited field: its tag, its length, then `write` writes its bytes. */
  message(field: number, length: number, write: () => void) {
    this.tag(field, 2)
    this.varint(length)
    write()
  }
  string(field: number, value: string) {
    const length = Buffer.byteLength(value, "utf8")
    this.tag(field, 2)
    this.varint(length)
    this.offset += this.bytes.write(value, this.offset, length, "utf8")
  }
  optionalString(field: number, value: string | undefined) {
    if (value !== undefined && value !== "") this.string(field, value)
  }
  count(field: number, value: number | undefined) {
    if (value !== undefined && value > 0) {
      this.tag(field, 0)
      this.varint(value)
    }
  }
  id(field: number, hex: string) {
    this.tag(field, 2)
    this.varint(hex.length / 2)
    this.offset += this.bytes.write(hex, this.offset, hex.length / 2, "hex")
  }
  fixed64(field: number, nanos: string) {
    this.tag(field, 1)
    this.offset = this.bytes.writeBigUInt64LE(BigInt(nanos), this.offset)
  }
  fixed32(field: number, value: number) {
    this.tag(field, 5)
    this.offset = this.bytes.writeUInt32LE(value >>> 0, this.offset)
  }
  list<A>(field: number, items: ReadonlyArray<A>, size: (item: A) => number, write: (item: A) => void) {
    for (const item of items) this.message(field, size(item), () => write(item))
  }

  anyValue(value: AnyValue) {
    if (value.stringValue !== undefined && value.stringValue !== null)
      return this.string(1, value.stringValue)
    if (value.boolValue !== undefined && value.boolValue !== null) {
      this.tag(2, 0)
      return this.byte(value.boolValue ? 1 : 0)
    }
    if (value.intValue !== undefined && value.intValue !== null) {
      this.tag(3, 0)
      return this.varint(value.intValue)
    }
    if (value.doubleValue !== undefined && value.doubleValue !== null) {
      this.tag(4, 1)
      this.offset = this.bytes.writeDoubleLE(value.doubleValue, this.offset)
      return
    }
    if (value.arrayValue !== undefined) {
      const values = value.arrayValue.values
      return this.message(5, listSize(values, anyValueSize), () =>
        this.list(1, values, anyValueSize, (item) => this.anyValue(item))
      )
    }
    if (value.kvlistValue !== undefined) {
      const values = value.kvlistValue.values
      return this.message(6, listSize(values, keyValueSize), () => this.keyValues(1, values))
    }
    if (value.bytesValue !== undefined) {
      const bytes = value.bytesValue
      this.message(7, bytes.length, () => {
        this.bytes.set(bytes, this.offset)
        this.offset += bytes.length
      })
    }
  }
  keyValues(field: number, items: ReadonlyArray<KeyValue>) {
    this.list(field, items, keyValueSize, (kv) => {
      this.string(1, kv.key)
      this.message(2, anyValueSize(kv.value), () => this.anyValue(kv.value))
    })
  }
  event(event: Event) {
    this.fixed64(1, event.timeUnixNano)
    this.string(2, event.name)
    this.keyValues(3, event.attributes)
    this.count(4, event.droppedAttributesCount)
  }
  link(link: Link) {
    this.id(1, link.traceId)
    this.id(2, link.spanId)
    this.optionalString(3, link.traceState)
    this.keyValues(4, link.attributes)
    this.count(5, link.droppedAttributesCount)
    if (link.flags !== undefined) this.fixed32(6, link.flags)
  }
  span(span: Span) {
    this.id(1, span.traceId)
    this.id(2, span.spanId)
    this.optionalString(3, span.traceState)
    if (span.parentSpanId !== undefined) this.id(4, span.parentSpanId)
    this.string(5, span.name)
    this.tag(6, 0)
    this.varint(span.kind)
    this.fixed64(7, span.startTimeUnixNano)
    this.fixed64(8, span.endTimeUnixNano)
    this.keyValues(9, span.attributes)
    this.count(10, span.droppedAttributesCount)
    this.list(11, span.events, eventSize, (event) => this.event(event))
    this.count(12, span.droppedEventsCount)
    this.list(13, span.links, linkSize, (link) => this.link(link))
    this.count(14, span.droppedLinksCount)
    this.message(15, statusSize(span.status), () => {
      this.optionalString(2, span.status.message)
      this.tag(3, 0)
      this.varint(span.status.code)
    })
    if (span.flags !== undefined) {
      // Field 16: a two-byte tag.
      this.byte(0x85)
      this.byte(0x01)
      this.offset = this.bytes.writeUInt32LE(span.flags >>> 0, this.offset)
    }
  }
  scopeSpans(scopeSpans: ScopeSpans) {
    const scope = scopeSpans.scope
    this.message(1, scopeSize(scope), () => {
      this.string(1, scope.name)
      this.optionalString(2, scope.version)
      if (scope.attributes) this.keyValues(3, scope.attributes)
      this.count(4, scope.droppedAttributesCount)
    })
    this.list(2, scopeSpans.spans, spanSize, (span) => this.span(span))
    this.optionalString(3, scopeSpans.schemaUrl)
  }
  resourceSpans(resourceSpans: ResourceSpans) {
    const resource = resourceSpans.resource
    this.message(1, attributedSize(resource), () => {
      this.keyValues(1, resource.attributes)
      this.count(2, resource.droppedAttributesCount)
    })
    this.list(2, resourceSpans.scopeSpans, scopeSpansSize, (scopeSpans) => this.scopeSpans(scopeSpans))
    this.optionalString(3, resourceSpans.schemaUrl)
  }
}

/** `data` as an ExportTraceServiceRequest in protobuf. */
export const encodeTraces = (data: TracesData): Uint8Array => {
  const writer = new Writer(Buffer.allocUnsafe(listSize(data.resourceSpans, resourceSpansSize)))
  writer.list(1, data.resourceSpans, resourceSpansSize, (resourceSpans) =>
    writer.resourceSpans(resourceSpans)
  )
  return writer.bytes
}

/** The request body of a batch of spans (OtlpSerialization's `traces`). */
export const tracesBody = (data: unknown): HttpBody.HttpBody =>
  HttpBody.uint8Array(encodeTraces(data as TracesData), "application/x-protobuf")
