/** node:http and node:net clients for what fetch hides: chunked bodies, exact sizes, resets. */
import { type IncomingMessage, request } from "node:http"
import { connect } from "node:net"
import { Effect } from "effect"
import type { Answer } from "./harness.js"

export interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: unknown
}

/** Reads a whole answer, its body parsed as JSON when it is JSON. */
const readAnswer = (res: IncomingMessage, resume: (effect: Effect.Effect<RawAnswer, Error>) => void) => {
  const chunks: Array<Buffer> = []
  res.on("data", (chunk: Buffer) => chunks.push(chunk))
  res.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8")
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {}
    resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: parsed }))
  })
  res.on("error", (error) => resume(Effect.fail(error)))
}

/**
 * Sends `body` in `chunkSize` pieces. With `chunked` the request has no Content-Length
 * (Transfer-Encoding: chunked); otherwise it declares the length. Fails on a reset.
 */
export const rawPost = (
  baseUrl: string,
  path: string,
  body: Buffer,
  options: { readonly key: string; readonly chunked: boolean; readonly chunkSize?: number }
) =>
  Effect.async<RawAnswer, Error>((resume) => {
    const url = new URL(path, baseUrl)
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          authorization: `Bearer ${options.key}`,
          "content-type": "application/json",
          ...(options.chunked ? {} : { "content-length": String(body.length) })
        }
      },
      (res) => readAnswer(res, resume)
    )
    req.on("error", (error) => resume(Effect.fail(error)))
    const size = options.chunkSize ?? 64 * 1024
    let offset = 0
    const writeMore = () => {
      while (offset < body.length) {
        const piece = body.subarray(offset, offset + size)
        offset += piece.length
        if (!req.write(piece)) {
          req.once("drain", writeMore)
          return
        }
      }
      req.end()
    }
    writeMore()
  })

/** A JSON submission body of exactly `size` bytes: `{"data":{"message":"xxx…"}}`. */
export const submissionBodyOfSize = (size: number, field = "message"): Buffer => {
  const frame = `{"data":{"${field}":""}}`
  return Buffer.from(`{"data":{"${field}":"${"x".repeat(size - frame.length)}"}}`)
}

/** A request whose path is sent exactly as given (fetch would resolve `%2e%2e` segments first). */
export const rawRequest = (
  baseUrl: string,
  method: string,
  rawPath: string,
  headers: Readonly<Record<string, string>> = {}
) =>
  Effect.async<RawAnswer, Error>((resume) => {
    const url = new URL(baseUrl)
    const req = request({ host: url.hostname, port: url.port, path: rawPath, method, headers }, (res) =>
      readAnswer(res, resume)
    )
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end()
  })

/** A TCP connection that speaks HTTP/1.1 as written: requests are sent byte for byte. */
export interface RawConnection {
  readonly write: (bytes: string | Buffer) => void
  /** The next whole answer on the connection (framed by its Content-Length). */
  readonly answer: Effect.Effect<Answer, Error>
  /** Whether the server has closed the connection. */
  readonly closed: () => boolean
  /** Waits until the server closes the connection. */
  readonly whenClosed: Effect.Effect<void>
  readonly destroy: () => void
  /** Ends the connection with a TCP reset. */
  readonly reset: () => void
}

/** The first whole answer in `bytes`, and what follows it; undefined while it is incomplete. */
const parseAnswer = (bytes: Buffer): { answer: Answer; rest: Buffer } | undefined => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end < 0) return undefined
  const [statusLine = "", ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n")
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  const length = Number(headers.get("content-length") ?? 0)
  if (bytes.length < end + 4 + length) return undefined
  const text = bytes.subarray(end + 4, end + 4 + length).toString("utf8")
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return {
    answer: { status: Number(statusLine.split(" ")[1]), headers, body },
    rest: bytes.subarray(end + 4 + length)
  }
}

/** A raw connection to the server at `baseUrl`, destroyed when the scope closes. */
export const rawConnection = (baseUrl: string) =>
  Effect.acquireRelease(
    Effect.async<RawConnection, Error>((resume) => {
      const url = new URL(baseUrl)
      const socket = connect(Number(url.port), url.hostname)
      let received: Buffer = Buffer.alloc(0)
      let isClosed = false
      const listeners = new Set<() => void>()
      const notify = () => {
        for (const listener of listeners) listener()
      }
      socket.on("data", (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        notify()
      })
      socket.on("close", () => {
        isClosed = true
        notify()
      })
      // A reset after the answer is the server closing too; a test asserts on what it received.
      socket.on("error", () => {})
      const when = <A>(ready: () => A | undefined, onClose: () => Effect.Effect<A, Error>) =>
        Effect.async<A, Error>((resumeWait) => {
          const check = () => {
            const value = ready()
            if (value !== undefined) {
              listeners.delete(check)
              resumeWait(Effect.succeed(value))
            } else if (isClosed) {
              listeners.delete(check)
              resumeWait(onClose())
            }
          }
          listeners.add(check)
          check()
          return Effect.sync(() => listeners.delete(check))
        })
      socket.once("connect", () =>
        resume(
          Effect.succeed({
            write: (bytes) => socket.write(bytes),
            answer: when(
              () => {
                const parsed = parseAnswer(received)
                if (parsed === undefined) return undefined
                received = parsed.rest
                return parsed.answer
              },
              () => Effect.fail(new Error(`closed without a whole answer: ${received.toString("latin1")}`))
            ),
            closed: () => isClosed,
            whenClosed: Effect.orDie(
              when(
                () => (isClosed ? true : undefined),
                () => Effect.succeed(true)
              )
            ).pipe(Effect.asVoid),
            destroy: () => socket.destroy(),
            reset: () => socket.resetAndDestroy()
          })
        )
      )
      socket.once("error", (error) => resume(Effect.fail(error)))
    }),
    (connection) => Effect.sync(connection.destroy)
  )
