/** node:http and node:net clients for what fetch hides: chunked bodies, exact sizes, resets. */
import { type IncomingMessage, request } from "node:http"
import { Effect } from "effect"

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
