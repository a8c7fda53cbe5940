/**
 * The outgoing-request guard and the limits of the Node receiver client, against real
 * sockets on 127.0.0.1 (names come from a DNS double).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { ReceiverClient, ReceiverUnreachable } from "@intake/domain"
import { StaticAddressResolver } from "@intake/testing"
import { Effect, Layer } from "effect"
import { NodeReceiverClient } from "../src/receiver-client.js"

interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

/** A local receiver answering with `handler`; records what it received. */
const localReceiver = (handler: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ server: Server; port: number; received: Array<Received> }>((resume) => {
      const received: Array<Received> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          received.push({
            method: request.method ?? "",
            url: request.url ?? "",
            headers: request.headers,
            body: Buffer.concat(chunks).toString("utf8")
          })
          handler(request, response)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ server, port: (server.address() as AddressInfo).port, received }))
      )
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const client = (
  allowPrivateNetworks: boolean,
  addresses: Record<string, ReadonlyArray<string>> = {},
  timeoutMs?: number
) =>
  NodeReceiverClient({ allowPrivateNetworks, ...(timeoutMs === undefined ? {} : { timeoutMs }) }).pipe(
    Layer.provide(StaticAddressResolver(addresses))
  )

const post = (url: string, body = '{"hello":"world"}') =>
  Effect.flatMap(ReceiverClient, (c) =>
    c.send({ url, headers: { "content-type": "application/json" }, body })
  )

describe("the outgoing-request guard, private networks not allowed", () => {
  const refusedUrls = [
    ["http://127.0.0.1/hook", "loopback"],
    ["http://[::1]/hook", "loopback"],
    ["http://10.0.0.1/hook", "private"],
    ["http://169.254.169.254/latest/meta-data", "link-local"],
    ["http://[::ffff:127.0.0.1]/hook", "loopback"],
    ["https://224.0.0.1/hook", "multicast"],
    ["https://240.0.0.1/hook", "reserved"],
    ["https://[fe80::1]/hook", "link-local"],
    ["https://[fd00::1]/hook", "private"]
  ] as const

  it.live("refuses loopback, private, link-local, multicast and reserved addresses without connecting", () =>
    Effect.gen(function* () {
      for (const [url, range] of refusedUrls) {
        const error = yield* Effect.flip(post(url))
        expect(error, url).toBeInstanceOf(ReceiverUnreachable)
        expect(error.message, url).toMatch(new RegExp(`^not sent: .* is a ${range} address$`))
      }
    }).pipe(Effect.provide(client(false)))
  )

  it.live("refuses a name that resolves to a private address, and a name with any forbidden address", () =>
    Effect.gen(function* () {
      const receiver = yield* localReceiver((_, response) => response.end("ok"))
      const error = yield* Effect.flip(post(`http://internal.example.com:${receiver.port}/hook`))
      expect(error.message).toBe(
        "not sent: internal.example.com resolves to a private address (192.168.10.20)"
      )
      const mixed = yield* Effect.flip(post(`http://mixed.example.com:${receiver.port}/hook`))
      expect(mixed.message).toMatch(/resolves to a loopback address \(127\.0\.0\.1\)/)
      const localhost = yield* Effect.flip(post(`http://localhost:${receiver.port}/hook`))
      expect(localhost.message).toBe("not sent: localhost is a loopback name")
      const unknown = yield* Effect.flip(post("https://nowhere.example.com/hook"))
      expect(unknown.message).toBe("not sent: nowhere.example.com does not resolve to an address")
      expect(receiver.received).toEqual([])
    }).pipe(
      Effect.scoped,
      Effect.provide(
        client(false, {
          "internal.example.com": ["192.168.10.20"],
          "mixed.example.com": ["93.184.216.34", "127.0.0.1"]
        })
      )
    )
  )
})

describe("the Node receiver client, private networks allowed", () => {
  it.live("connects to the address it checked, not to what the name resolves to later", () =>
    Effect.gen(function* () {
      const receiver = yield* localReceiver((_, response) => response.writeHead(202).end("accepted"))
      // receiver.test exists only in the DNS double: the socket can only have used the vetted address.
      const answer = yield* post(`http://receiver.test:${receiver.port}/hooks?x=1`, '{"a":1}')
      expect(answer).toEqual({ status: 202, body: "accepted", retryAfter: null })
      expect(receiver.received).toHaveLength(1)
      expect(receiver.received[0]).toMatchObject({ method: "POST", url: "/hooks?x=1", body: '{"a":1}' })
      expect(receiver.received[0]!.headers.host).toBe(`receiver.test:${receiver.port}`)
      expect(receiver.received[0]!.headers["content-type"]).toBe("application/json")
    }).pipe(Effect.scoped, Effect.provide(client(true, { "receiver.test": ["127.0.0.1"] })))
  )

  it.live("keeps the first 1 KB of the answer, with its status and Retry-After", () =>
    Effect.gen(function* () {
      const receiver = yield* localReceiver((_, response) =>
        response.writeHead(503, { "retry-after": "120" }).end("é".repeat(100_000))
      )
      const answer = yield* post(`http://127.0.0.1:${receiver.port}/`)
      expect(answer.status).toBe(503)
      expect(answer.retryAfter).toBe("120")
      expect(Buffer.byteLength(answer.body)).toBeLessThanOrEqual(1024)
      expect(answer.body.startsWith("é".repeat(500))).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(client(true)))
  )

  it.live("does not follow redirects", () =>
    Effect.gen(function* () {
      const target = yield* localReceiver((_, response) => response.end("moved here"))
      const receiver = yield* localReceiver((_, response) =>
        response.writeHead(307, { location: `http://127.0.0.1:${target.port}/` }).end()
      )
      const answer = yield* post(`http://127.0.0.1:${receiver.port}/`)
      expect(answer.status).toBe(307)
      expect(target.received).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(client(true)))
  )

  it.live("gives up on a receiver that does not answer in time, and on one that refuses connections", () =>
    Effect.gen(function* () {
      const silent = yield* localReceiver(() => {})
      const started = Date.now()
      const error = yield* Effect.flip(post(`http://127.0.0.1:${silent.port}/`))
      expect(error.message).toBe("no answer within 0.3 seconds")
      expect(Date.now() - started).toBeLessThan(2_000)
      const closed = yield* localReceiver(() => {})
      const port = closed.port
      yield* Effect.async<void>((resume) => {
        closed.server.close(() => resume(Effect.void))
      })
      const refused = yield* Effect.flip(post(`http://127.0.0.1:${port}/`))
      expect(refused.message).toBe("could not reach the receiver (ECONNREFUSED)")
    }).pipe(Effect.scoped, Effect.provide(client(true, {}, 300)))
  )
})
