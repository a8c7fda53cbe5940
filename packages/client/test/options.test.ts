/**
 * The client's options against a real HTTP server on loopback: User-Agent, the timeout of
 * each attempt, AbortSignals (the client's and a call's), onRetry, and the bound on how long
 * a 429 is waited for. Waits before a retry go through an injected sleep that records them,
 * except where a test shows that an abort cuts the default timer short.
 */
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import {
  type Fetch,
  IntakeClient,
  type IntakeClientOptions,
  IntakeError,
  IntakeTimeoutError,
  type RetryInfo,
  VERSION
} from "../src/index.js"

type Answer = (request: IncomingMessage, response: ServerResponse) => void

interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
}

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** A server on 127.0.0.1 that answers its n-th request with the n-th answer (500 past the list). */
const loopback = async (answers: ReadonlyArray<Answer>) => {
  const received: Array<Received> = []
  const server = createServer((request, response) => {
    const answer = answers[received.length] ?? json(500, "no answer scripted")
    received.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers })
    request.resume()
    answer(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  )
  const { port } = server.address() as AddressInfo
  return { baseUrl: `http://127.0.0.1:${port}`, received }
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Answer =>
  (_, response) => {
    response.writeHead(status, { "content-type": "application/json", ...headers })
    response.end(typeof body === "string" ? body : JSON.stringify(body))
  }
/** Reads the request and never answers. */
const silent: Answer = () => {}
/** Sends the head and half a body, then nothing more. */
const stalledBody: Answer = (_, response) => {
  response.writeHead(200, { "content-type": "application/json" })
  response.write('{"success":true,"data":')
}
/** Closes the connection without an answer. */
const reset: Answer = (request) => request.socket.destroy()

const deleted = json(200, { success: true, data: { id: "wh_1", deleted: true } })
const rateLimited = (seconds: number) =>
  json(
    429,
    {
      success: false,
      error: { code: "rate_limit_exceeded", message: "slow down", details: { retry_after: seconds } }
    },
    { "retry-after": String(seconds) }
  )

/** A client of `baseUrl` whose waits before a retry are recorded and skipped, and whose retries are told. */
const recording = (baseUrl: string, options: Partial<IntakeClientOptions> = {}) => {
  const slept: Array<number> = []
  const retries: Array<RetryInfo> = []
  const client = new IntakeClient({
    apiKey: "svc_live_test",
    baseUrl,
    sleep: async (ms) => {
      slept.push(ms)
    },
    onRetry: (retry) => retries.push(retry),
    ...options
  })
  return { client, slept, retries }
}

describe("User-Agent", () => {
  it("is intake-client/<the package's version> unless the client is given another", async () => {
    const packageJson = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8"))
    expect(VERSION).toBe(packageJson.version)
    const server = await loopback([deleted, deleted])
    await recording(server.baseUrl).client.deleteWebhook("wh_1")
    await recording(server.baseUrl, { userAgent: "acme-sync/2.1" }).client.deleteWebhook("wh_1")
    expect(server.received.map((request) => request.headers["user-agent"])).toEqual([
      `intake-client/${packageJson.version}`,
      "acme-sync/2.1"
    ])
  })

  it("is not set by default in a browser, which sends its own (Intake's CORS allows no script-set User-Agent)", async () => {
    vi.stubGlobal("navigator", { userAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0" })
    try {
      const server = await loopback([deleted, deleted])
      const sent: Array<Record<string, string>> = []
      const fetchRecorded: Fetch = (url, init) => {
        sent.push(init.headers)
        return fetch(url, init)
      }
      await recording(server.baseUrl, { fetch: fetchRecorded }).client.deleteWebhook("wh_1")
      await recording(server.baseUrl, { fetch: fetchRecorded, userAgent: "acme-web/3" }).client.deleteWebhook(
        "wh_1"
      )
      expect(sent.map((headers) => headers["user-agent"])).toEqual([undefined, "acme-web/3"])
    } finally {
      vi.unstubAllGlobals()
    }
  })
})

describe("timeoutMs", () => {
  it("aborts an attempt that gets no answer, retries it, and throws IntakeTimeoutError when none answers", async () => {
    const server = await loopback([silent, silent])
    const { client, retries } = recording(server.baseUrl, { timeoutMs: 50, maxRetries: 1 })
    const error = await client.getWebhook("wh_1").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(IntakeTimeoutError)
    expect(error).toMatchObject({ timeoutMs: 50 })
    expect(server.received).toHaveLength(2)
    expect(retries.map((retry) => [retry.attempt, retry.reason, retry.method, retry.path])).toEqual([
      [1, "timeout", "GET", "/v1/webhooks/wh_1"]
    ])
  })

  it("covers the answer's body: one that stalls after its head times out", async () => {
    const server = await loopback([stalledBody])
    const { client } = recording(server.baseUrl, { timeoutMs: 50, maxRetries: 0 })
    await expect(client.deleteWebhook("wh_1")).rejects.toBeInstanceOf(IntakeTimeoutError)
  })

  it("is per call when the call gives one, and the client's otherwise", async () => {
    const server = await loopback([silent, deleted])
    const { client } = recording(server.baseUrl, { maxRetries: 0 })
    await expect(client.getWebhook("wh_1", { timeoutMs: 50 })).rejects.toMatchObject({
      name: "IntakeTimeoutError",
      timeoutMs: 50
    })
    await expect(client.deleteWebhook("wh_1")).resolves.toEqual({ id: "wh_1", deleted: true })
    expect(() => recording(server.baseUrl, { timeoutMs: 0 })).toThrow(RangeError)
  })
})

describe("timeoutMs past what a timer keeps", () => {
  it("waits as Infinity does, instead of a timer that overflows and fires at once", async () => {
    const later: Answer = (request, response) => {
      setTimeout(() => deleted(request, response), 30)
    }
    const server = await loopback([later, later])
    for (const timeoutMs of [2 ** 31, Number.POSITIVE_INFINITY]) {
      const { client } = recording(server.baseUrl, { timeoutMs, maxRetries: 0 })
      await expect(client.deleteWebhook("wh_1"), String(timeoutMs)).resolves.toEqual({
        id: "wh_1",
        deleted: true
      })
    }
  })
})

describe("signal", () => {
  it("a call's signal cancels the request in flight: rejected with the signal's reason, not retried", async () => {
    const controller = new AbortController()
    const stop = new Error("the user left the page")
    const server = await loopback([() => controller.abort(stop)])
    const { client, retries } = recording(server.baseUrl)
    await expect(client.createSubmission("bot_1", { data: {} }, { signal: controller.signal })).rejects.toBe(
      stop
    )
    expect(server.received).toHaveLength(1)
    expect(retries).toEqual([])
  })

  it("a signal aborted before the call sends nothing; a list's signal holds for every page", async () => {
    const server = await loopback([])
    const { client } = recording(server.baseUrl)
    const aborted = AbortSignal.abort()
    await expect(client.listWebhooks({}, { signal: aborted })).rejects.toMatchObject({ name: "AbortError" })
    const pages = client.listWebhooks({ limit: 1 }, { signal: aborted }).pages()
    await expect(pages.next()).rejects.toMatchObject({ name: "AbortError" })
    expect(server.received).toEqual([])
  })

  it("the client's signal cancels its calls, the wait before a retry included (the default timer)", async () => {
    const controller = new AbortController()
    const server = await loopback([rateLimited(30), deleted])
    // No injected sleep: the 30-second wait is the real timer, which the abort must cut short.
    const client = new IntakeClient({
      apiKey: "svc_live_test",
      baseUrl: server.baseUrl,
      signal: controller.signal,
      onRetry: () => controller.abort()
    })
    await expect(client.deleteWebhook("wh_1")).rejects.toMatchObject({ name: "AbortError" })
    expect(server.received).toHaveLength(1)
    await expect(client.deleteWebhook("wh_1")).rejects.toMatchObject({ name: "AbortError" })
    expect(server.received).toHaveLength(1)
  })
})

describe("onRetry", () => {
  it("is told each retry's attempt, delay, reason and error before it waits, and the POST keeps its key", async () => {
    const server = await loopback([
      json(503, "<html>bad gateway</html>"),
      json(500, { success: false, error: { code: "internal_error", message: "oops" } }),
      rateLimited(2),
      reset,
      json(201, {
        success: true,
        data: { submission: { id: "sub_1", status: "COMPLETED", created_at: "2026-11-27T10:00:00.000Z" } }
      })
    ])
    const { client, slept, retries } = recording(server.baseUrl, { maxRetries: 4, retryDelayMs: 100 })
    await expect(client.createSubmission("bot_1", { data: {} })).resolves.toMatchObject({ id: "sub_1" })
    expect(retries.map((retry) => [retry.attempt, retry.reason, retry.error.name])).toEqual([
      [1, "server_error", "IntakeUnexpectedResponse"],
      [2, "server_error", "IntakeError"],
      [3, "rate_limited", "IntakeError"],
      [4, "network_error", "IntakeConnectionError"]
    ])
    expect(retries[2]?.delayMs).toBe(2_000)
    expect(slept).toEqual(retries.map((retry) => retry.delayMs))
    // Backoff: half to all of retryDelayMs doubled per retry.
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(50)
    expect(retries[0]?.delayMs).toBeLessThanOrEqual(100)
    expect(new Set(server.received.map((request) => request.headers["idempotency-key"])).size).toBe(1)
  })

  it("stops the retries when it throws: the call rejects with its error", async () => {
    const server = await loopback([json(503, "busy"), deleted])
    const enough = new Error("enough")
    const { client } = recording(server.baseUrl, {
      onRetry: () => {
        throw enough
      }
    })
    await expect(client.deleteWebhook("wh_1")).rejects.toBe(enough)
    expect(server.received).toHaveLength(1)
  })
})

describe("maxRetryAfterSeconds", () => {
  it("waits a Retry-After of up to 60 seconds by default, and throws a longer one's 429 at once", async () => {
    const server = await loopback([rateLimited(60), deleted, rateLimited(61)])
    const { client, slept, retries } = recording(server.baseUrl)
    await expect(client.deleteWebhook("wh_1")).resolves.toEqual({ id: "wh_1", deleted: true })
    expect(slept).toEqual([60_000])
    const error = await client.deleteWebhook("wh_1").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(IntakeError)
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded" })
    expect(slept).toEqual([60_000])
    expect(retries).toHaveLength(1)
    expect(server.received).toHaveLength(3)
  })

  it("is the bound it is given; 0 never waits on a 429", async () => {
    const server = await loopback([rateLimited(5), deleted, rateLimited(6), rateLimited(1)])
    const bounded = recording(server.baseUrl, { maxRetryAfterSeconds: 5 })
    await expect(bounded.client.deleteWebhook("wh_1")).resolves.toEqual({ id: "wh_1", deleted: true })
    await expect(bounded.client.deleteWebhook("wh_1")).rejects.toMatchObject({ status: 429 })
    expect(bounded.slept).toEqual([5_000])
    const never = recording(server.baseUrl, { maxRetryAfterSeconds: 0 })
    await expect(never.client.deleteWebhook("wh_1")).rejects.toMatchObject({ status: 429 })
    expect(never.slept).toEqual([])
  })
})
