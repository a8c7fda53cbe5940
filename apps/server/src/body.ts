/**
 * Reading a JSON body with the 1 MB limit. `withMaxBodySize` makes platform-node destroy
 * the request, so the client sees a reset connection instead of the 400. Here a declared
 * Content-Length over the limit is refused without reading, and a body without one is
 * counted as it arrives: at the limit the reader stops keeping bytes and lets the rest
 * drain unread, so the client finishes sending and receives the 400 envelope.
 *
 * The read has a deadline of its own (INTAKE_BODY_TIMEOUT, docs/choices.md "Request
 * bodies"): a body still arriving then is refused with 400 and its connection closed after
 * the answer. The timer exists only while a body is being read.
 */
import type { IncomingMessage } from "node:http"
import { invalid, type ValidationFailed } from "@intake/domain"
import { Context, Duration, Effect } from "effect"
import { parseJsonBody } from "./json-body.js"
import type { IncomingRequest } from "./request.js"

export const MAX_BODY_BYTES = 1_048_576

const tooLarge = () => invalid([{ path: "", message: `the body is larger than ${MAX_BODY_BYTES} bytes` }])

const JSON_TYPE = /^application\/json\s*(;|$)/i

export const DEFAULT_BODY_TIMEOUT = Duration.seconds(10)

/** INTAKE_BODY_TIMEOUT: how long a body may take to arrive, in ms (server.ts provides it). */
export class BodyReadTimeout extends Context.Reference<BodyReadTimeout>()("@intake/server/BodyReadTimeout", {
  defaultValue: () => Duration.toMillis(DEFAULT_BODY_TIMEOUT)
}) {}

/** Requests whose body stopped being read before its end: their connection closes after the answer. */
const abandonedBodies = new WeakSet<IncomingMessage>()

/** Whether the answer to `message` must close its connection (the rest of its body was never read). */
export const bodyAbandoned = (message: IncomingMessage) => !message.complete && abandonedBodies.has(message)

type Read =
  | { readonly _tag: "Complete"; readonly bytes: Buffer }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "TimedOut" }

const countedRead = (message: IncomingMessage, limit: number, timeoutMs: number) =>
  Effect.async<Read, ValidationFailed>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const timer = setTimeout(() => {
      cleanup()
      abandonedBodies.add(message)
      // Flowing without listeners: whatever still trickles in is discarded until the close.
      message.resume()
      resume(Effect.succeed({ _tag: "TimedOut" }))
    }, timeoutMs)
    const cleanup = () => {
      clearTimeout(timer)
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("close", onClose)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        // Keep the stream flowing without listeners: the rest is discarded as it arrives.
        message.resume()
        resume(Effect.succeed({ _tag: "TooLarge" }))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed({ _tag: "Complete", bytes: Buffer.concat(chunks, size) }))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(invalid([{ path: "", message: "the body could not be read" }])))
    }
    const onClose = () => {
      if (!message.readableEnded) onError()
    }
    message.on("data", onData)
    message.on("end", onEnd)
    message.on("error", onError)
    message.on("close", onClose)
    return Effect.sync(cleanup)
  })

/**
 * The body when it arrived whole before the route reads it (a small body comes in the same
 * packets as its headers, and the route reads it after the rate limit's answer): its bytes
 * are taken from the stream at once, without listeners, a timer or a wait. Undefined while
 * any of it is still to come, or when it is over the limit (countedRead drains it).
 */
const arrivedBody = (message: IncomingMessage): Buffer | undefined => {
  // `complete` is set with the end of the body pushed into the stream: all of it is buffered.
  if (!message.complete || message.readableFlowing === true || message.readableEnded) return undefined
  if (message.readableLength > MAX_BODY_BYTES) return undefined
  // Reading to the end lets the stream emit 'end', as a read through listeners does.
  const bytes = message.read() as Buffer | null
  return bytes ?? Buffer.alloc(0)
}

/** The parsed JSON body: 400 for another content type, a body over the limit or malformed JSON. */
export const readJsonBody = (request: IncomingRequest): Effect.Effect<unknown, ValidationFailed> => {
  const contentType = request.headers["content-type"]
  if (contentType === undefined || !JSON_TYPE.test(contentType)) {
    return Effect.fail(invalid([{ path: "", message: "Content-Type must be application/json" }]))
  }
  const declared = request.headers["content-length"]
  if (declared !== undefined && Number(declared) > MAX_BODY_BYTES) return Effect.fail(tooLarge())
  const contentEncoding = request.headers["content-encoding"]
  const arrived = arrivedBody(request.message)
  if (arrived !== undefined) return parseJsonBody(arrived, contentEncoding, MAX_BODY_BYTES)
  return Effect.flatMap(BodyReadTimeout, (timeoutMs) =>
    Effect.flatMap(countedRead(request.message, MAX_BODY_BYTES, timeoutMs), (read) => {
      if (read._tag === "TooLarge") return Effect.fail(tooLarge())
      if (read._tag === "TimedOut")
        return Effect.fail(
          invalid([
            {
              path: "",
              message: `the body did not arrive within ${Duration.format(Duration.millis(timeoutMs))}`
            }
          ])
        )
      return parseJsonBody(read.bytes, contentEncoding, MAX_BODY_BYTES)
    })
  )
}
