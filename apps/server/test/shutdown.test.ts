/**
 * SIGTERM on a server with a request in flight: it stops accepting connections, lets the
 * request finish with its full answer, and exits 0 within its bound.
 */
import { request } from "node:http"
import { connect } from "node:net"
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SHUTDOWN_TIMEOUT_MS } from "../src/server.js"
import { startServer } from "./process.js"

/** A POST whose body is sent in two halves: `sendRest` sends the second; `answer` is the response. */
const slowPost = (baseUrl: string, path: string, key: string, body: string) => {
  const url = new URL(path, baseUrl)
  const bytes = Buffer.from(body, "utf8")
  const half = Math.floor(bytes.length / 2)
  const req = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "content-length": String(bytes.length)
    }
  })
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") })
      )
      res.on("error", reject)
    })
    req.on("error", reject)
  })
  req.write(bytes.subarray(0, half))
  req.flushHeaders()
  return { answer, sendRest: () => req.end(bytes.subarray(half)) }
}

/** Whether a new TCP connection to the port is accepted. */
const accepts = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
  })

it.scopedLive(
  "SIGTERM during a slow request: the request gets its full answer, new connections are refused, exit 0",
  () =>
    Effect.gen(function* () {
      const server = yield* startServer({})
      const key = server.demoKey!
      expect(key).toMatch(/^svc_live_/)
      const port = Number(new URL(server.baseUrl).port)
      const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
        server.child.once("exit", (code) => resolve({ code, at: performance.now() }))
      )

      const body = JSON.stringify({
        url: "https://8.8.8.8/hooks",
        events: ["submission.completed"],
        description: "registered while the server stops"
      })
      const slow = slowPost(server.baseUrl, "/v1/webhooks", key, body)
      // Let the server receive the headers and the first half before it is told to stop.
      yield* Effect.sleep("300 millis")
      const signalledAt = performance.now()
      server.child.kill("SIGTERM")
      yield* Effect.sleep("500 millis")
      expect(yield* accepts(port)).toBe(false)
      expect(server.child.exitCode).toBeNull()
      slow.sendRest()

      const answer = yield* Effect.promise(() => slow.answer)
      expect(answer.status, answer.text).toBe(200)
      expect(JSON.parse(answer.text)).toMatchObject({
        success: true,
        data: {
          webhook: {
            id: expect.stringMatching(/^wh_/),
            url: "https://8.8.8.8/hooks",
            description: "registered while the server stops",
            secret: expect.stringMatching(/^whsec_/)
          }
        }
      })

      const exit = yield* Effect.promise(() => exited)
      expect(exit.code, server.output().stderr).toBe(0)
      expect(exit.at - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS)
    }),
  120_000
)
