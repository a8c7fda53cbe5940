/**
 * Verifying a delivery (Standard Webhooks): the HMAC-SHA256 of
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64 secret after `whsec_`,
 * compared in constant time (WebCrypto's verify) with each `v1,` signature of the header,
 * and a timestamp within the tolerance of now, so a captured delivery cannot be replayed later.
 */
import { WebhookVerificationError } from "./errors.js"
import type { WebhookEvent } from "./types.js"

/** Node's `request.headers`, or a fetch `Headers`. */
export type WebhookHeaders =
  | { readonly get: (name: string) => string | null }
  | { readonly [name: string]: string | ReadonlyArray<string> | undefined }

export interface VerifyOptions {
  /**
   * How far the timestamp may be from now, in seconds (default 300). A value that is not a
   * finite number, 0 or more (NaN, Infinity, -1) throws a RangeError.
   */
  readonly toleranceSeconds?: number
  /** Now in milliseconds (default Date.now); for tests. */
  readonly now?: () => number
}

const header = (headers: WebhookHeaders, name: string): string | undefined => {
  if (typeof headers.get === "function") return headers.get(name) ?? undefined
  const value = (headers as { readonly [name: string]: string | ReadonlyArray<string> | undefined })[name]
  return typeof value === "string" ? value : value?.[0]
}

/** Base64 whole groups, then a last group padded or not; nothing else (atob throws on the rest). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/

/** The bytes of a base64 text; undefined, never an exception, when it is not base64. */
const fromBase64 = (text: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!BASE64.test(text)) return undefined
  let binary: string
  try {
    binary = atob(text)
  } catch {
    return undefined
  }
  return Uint8Array.from(binary, (character) => character.charCodeAt(0))
}

const DEFAULT_TOLERANCE_SECONDS = 300

/** The tolerance to apply: a given one must be a finite number of seconds, 0 or more. */
const toleranceOf = (options: VerifyOptions): number => {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  // NaN or Infinity would turn the replay check off; refused as the caller's mistake.
  if (!Number.isFinite(tolerance) || tolerance < 0)
    throw new RangeError(`toleranceSeconds must be a finite number, 0 or more (got ${tolerance})`)
  return tolerance
}

const KNOWN_TYPES: ReadonlySet<string> = new Set([
  "submission.completed",
  "contact.created",
  "webhook.disabled",
  "webhook.test"
])

const isEvent = (value: unknown): value is WebhookEvent =>
  typeof value === "object" &&
  value !== null &&
  "type" in value &&
  typeof value.type === "string" &&
  KNOWN_TYPES.has(value.type) &&
  "id" in value &&
  typeof value.id === "string" &&
  "data" in value &&
  typeof value.data === "object"

/**
 * Verifies a delivery over its raw body (before parsing it) and returns its event, typed by
 * `type`. Throws WebhookVerificationError when it does not verify, whatever is malformed
 * (a header, a signature, the secret, the body); a RangeError for an invalid `toleranceSeconds`.
 */
export const verifyWebhook = async (
  body: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {}
): Promise<WebhookEvent> => {
  const tolerance = toleranceOf(options)
  const id = header(headers, "webhook-id")
  const timestamp = header(headers, "webhook-timestamp")
  const signatures = header(headers, "webhook-signature")
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature")
  }
  const seconds = /^[0-9]{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN
  const now = (options.now ?? Date.now)() / 1000
  // Written so that any NaN (a timestamp, or a `now` of a test) fails the check instead of passing it.
  if (!(Math.abs(now - seconds) <= tolerance)) {
    throw new WebhookVerificationError("The webhook-timestamp is missing, malformed or outside the tolerance")
  }
  if (typeof secret !== "string") throw new WebhookVerificationError("The secret is not a whsec_ secret")
  const keyBytes = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret)
  if (keyBytes === undefined || keyBytes.length === 0)
    throw new WebhookVerificationError("The secret is not a whsec_ secret")
  const text = typeof body === "string" ? body : new TextDecoder().decode(body)
  const encoder = new TextEncoder()
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify"
  ])
  const signed = encoder.encode(`${id}.${timestamp}.${text}`)
  let verified = false
  for (const entry of signatures.split(" ")) {
    const [version, signature] = entry.split(",", 2)
    const bytes = version === "v1" && signature !== undefined ? fromBase64(signature) : undefined
    // crypto.subtle.verify compares in constant time.
    if (bytes !== undefined && (await crypto.subtle.verify("HMAC", key, bytes, signed))) verified = true
  }
  if (!verified) throw new WebhookVerificationError("No signature matches")
  let event: unknown
  try {
    event = JSON.parse(text)
  } catch {
    throw new WebhookVerificationError("The body is not JSON")
  }
  if (!isEvent(event)) throw new WebhookVerificationError("The body is not an Intake event")
  return event
}
