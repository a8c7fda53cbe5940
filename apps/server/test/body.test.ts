/**
 * Reading a JSON body (body.ts): one that arrived whole before the route reads it is taken
 * from the stream at once; one still arriving is read through the stream's events. Both
 * answer alike, and the connection goes on serving the next request.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { readJsonBody } from "../src/body.js"
import { toIncomingRequest } from "../src/request.js"

/** Waits until the whole body is in the stream's buffer (the case a route meets after an awaited step). */
const arrived = (message: IncomingMessage) =>
  new Promise<void>((resolve) => {
    const check = () => (message.complete ? resolve() : setTimeout(check, 2))
    check()
  })

let server: Server
let port = 0

beforeAll(async () => {
  server = createServer(async (message, response) => {
    const waitForBody = message.headers["x-wait"] === "arrived"
    if (waitForBody) await arrived(message)
    const completeBeforeRead = message.complete
    const outcome = await Effect.runPromise(Effect.either(readJsonBody(toIncomingRequest(message))))
    const body = Either.isRight(outcome)
      ? { value: outcome.right, completeBeforeRead }
      : { issues: outcome.left.issues, completeBeforeRead }
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify(body))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

interface Sent {
  readonly headers?: Record<string, string>
  /** Sent in this many pieces, 30 ms apart (the body still arriving when the route reads it). */
  readonly pieces?: ReadonlyArray<Buffer | string>
  readonly body?: Buffer | string
  readonly agent?: import("node:http").Agent
}

const send = ({ headers = {}, pieces, body, agent }: Sent) =>
  new Promise<{ value?: unknown; issues?: Array<{ message: string }>; completeBeforeRead: boolean }>(
    (resolve, reject) => {
      const request = httpRequest(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/",
          agent,
          headers: { "content-type": "application/json", ...headers }
        },
        (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString())))
        }
      )
      request.on("error", reject)
      if (pieces === undefined) {
        request.end(body)
        return
      }
      let index = 0
      const next = () => {
        if (index === pieces.length) return request.end()
        request.write(pieces[index++])
        setTimeout(next, 30)
      }
      next()
    }
  )

describe("reading a JSON body", () => {
  it("takes a body that arrived whole at once, and the connection serves the next request", async () => {
    const { Agent } = await import("node:http")
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const first = await send({ headers: { "x-wait": "arrived" }, body: '{"data":{"a":1}}', agent })
      expect(first).toEqual({ value: { data: { a: 1 } }, completeBeforeRead: true })
      const second = await send({ headers: { "x-wait": "arrived" }, body: '{"b":[true]}', agent })
      expect(second).toEqual({ value: { b: [true] }, completeBeforeRead: true })
    } finally {
      agent.destroy()
    }
  })

  it("reads a body still arriving through the stream, with the same answer", async () => {
    const outcome = await send({ pieces: ['{"data":', '{"a":1}}'] })
    expect(outcome).toEqual({ value: { data: { a: 1 } }, completeBeforeRead: false })
  })

  it("undoes gzip on a body that arrived whole", async () => {
    const outcome = await send({
      headers: { "x-wait": "arrived", "content-encoding": "gzip" },
      body: gzipSync('{"zipped":"yes"}')
    })
    expect(outcome).toEqual({ value: { zipped: "yes" }, completeBeforeRead: true })
  })

  it.each([
    ["arrived", { headers: { "x-wait": "arrived" }, body: "{not json" }],
    ["still arriving", { pieces: ["{not", " json"] }]
  ] as const)("refuses malformed JSON (%s)", async (_, sent) => {
    const outcome = await send(sent)
    expect(outcome.issues?.map((issue) => issue.message)).toEqual(["the body is not valid JSON"])
  })

  it("refuses an empty body that arrived whole as not JSON", async () => {
    const outcome = await send({ headers: { "x-wait": "arrived", "content-length": "0" }, body: "" })
    expect(outcome.issues?.map((issue) => issue.message)).toEqual(["the body is not valid JSON"])
  })
})
