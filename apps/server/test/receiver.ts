/** A local webhook receiver on 127.0.0.1 for HTTP tests: scripted answers, every request kept. */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  // biome-ignore lint/suspicious/noExplicitAny: payloads are checked by assertions
  readonly payload: any
}

/**
 * Answers each request with the next status of `statuses` (the last one repeats). Lives
 * for the scope.
 */
export const localReceiver = (statuses: ReadonlyArray<number> = [200]) =>
  Effect.acquireRelease(
    Effect.async<{
      url: string
      received: Array<Received>
      answerWith: (s: ReadonlyArray<number>) => void
      close: () => void
    }>((resume) => {
      const received: Array<Received> = []
      let script = [...statuses]
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          received.push({ headers: request.headers, body, payload: JSON.parse(body) })
          const status = script.length > 1 ? script.shift()! : (script[0] ?? 200)
          response.writeHead(status, { "content-type": "text/plain" }).end(`answered ${status}`)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
            received,
            answerWith: (next: ReadonlyArray<number>) => {
              script = [...next]
            },
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      )
    }),
    (receiver) => Effect.sync(receiver.close)
  )

/** Waits (real time) until `check` holds, at most `timeoutMs`. */
export const eventually = (check: () => boolean, timeoutMs = 5_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.dieMessage("timed out waiting for the receiver")
      yield* Effect.sleep("10 millis")
    }
  })
