/**
 * SIGTERM on a server: it drains first (INTAKE_SHUTDOWN_DRAIN: /readyz 503, requests still
 * served, each answer closing its connection), then stops accepting connections, lets the
 * requests in flight finish with their full answer, and exits 0 within its bound.
 */
import { request } from "node:http"
import { connect } from "node:net"
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SHUTDOWN_TIMEOUT_MS } from "../src/server.js"
import { startServer, timedGet } from "./process.js"
import { rawConnection } from "./raw-http.js"

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

/**
 * A client that opens connection after connection, each sending its request 20 ms after it
 * is accepted, until one is refused (the server stopped accepting): how many were answered,
 * and how many were accepted and then lost (closed or reset without an answer).
 */
const knockUntilRefused = (port: number) =>
  new Promise<{ answered: number; lost: number }>((resolve) => {
    let answered = 0
    let lost = 0
    const knock = () => {
      const socket = connect(port, "127.0.0.1")
      let accepted = false
      let received = ""
      socket.once("connect", () => {
        accepted = true
        setTimeout(() => {
          if (!socket.destroyed)
            socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        }, 20)
      })
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1")
      })
      // A connection the kernel took into the listen backlog but the server never accepted is
      // reset when the listener closes: for the client, a refusal, not a lost request.
      let reset = false
      socket.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ECONNRESET" && received === "") reset = true
      })
      socket.once("close", () => {
        if (!accepted || reset) return resolve({ answered, lost })
        if (received.startsWith("HTTP/1.1 200")) answered++
        else lost++
        knock()
      })
    }
    knock()
  })

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

it.scopedLive(
  "SIGTERM drains: /readyz answers 503, a request on a reused keep-alive connection gets its full answer with Connection: close, every connection accepted is answered, exit 0 after the drain",
  () =>
    Effect.gen(function* () {
      const DRAIN_MS = 1_000
      const server = yield* startServer({ INTAKE_SHUTDOWN_DRAIN: `${DRAIN_MS}ms` })
      const key = server.demoKey!
      const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
        server.child.once("exit", (code) => resolve({ code, at: performance.now() }))
      )
      const listBots = `GET /v1/intake-bots HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`
      const connection = yield* rawConnection(server.baseUrl)
      connection.write(listBots)
      const before = yield* connection.answer
      expect(before.status).toBe(200)
      expect(before.headers.get("connection")).toBe("keep-alive")

      // Clients connecting all the while, through the drain and past it: each connection is
      // either answered or refused, never accepted and then dropped (docs/choices.md, Operations).
      const knockers = Array.from({ length: 3 }, () =>
        knockUntilRefused(Number(new URL(server.baseUrl).port))
      )
      const signalledAt = performance.now()
      server.child.kill("SIGTERM")
      // The signal reaches the process a moment later: /readyz turns 503 then, on new connections.
      let ready = yield* timedGet(server.baseUrl, "/readyz")
      while (ready.status === 200 && performance.now() - signalledAt < DRAIN_MS) {
        yield* Effect.sleep("10 millis")
        ready = yield* timedGet(server.baseUrl, "/readyz")
      }
      expect(ready.status, ready.body).toBe(503)
      expect(JSON.parse(ready.body)).toMatchObject({
        success: false,
        error: { code: "service_unavailable", message: "The server is shutting down." }
      })
      expect(ready.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/)

      // The connection opened before the signal is still served, and told to close.
      connection.write(listBots)
      const during = yield* connection.answer
      expect(during.status, JSON.stringify(during.body)).toBe(200)
      expect(during.body).toMatchObject({
        success: true,
        data: { intake_bots: [{ name: expect.any(String) }] }
      })
      expect(during.headers.get("connection")).toBe("close")
      expect(during.headers.get("x-ratelimit-limit")).toMatch(/^\d+$/)
      yield* connection.whenClosed
      expect(server.child.exitCode).toBeNull()

      const knocked = yield* Effect.promise(() => Promise.all(knockers))
      expect(
        knocked.reduce((sum, k) => sum + k.lost, 0),
        JSON.stringify(knocked)
      ).toBe(0)
      expect(knocked.reduce((sum, k) => sum + k.answered, 0)).toBeGreaterThan(0)

      const exit = yield* Effect.promise(() => exited)
      expect(exit.code, server.output().stderr).toBe(0)
      expect(exit.at - signalledAt).toBeGreaterThanOrEqual(DRAIN_MS)
      expect(exit.at - signalledAt).toBeLessThan(DRAIN_MS + SHUTDOWN_TIMEOUT_MS)
    }),
  120_000
)
