/** The client's retry, idempotency and pagination rules, on a scripted fetch (no server). */
import { beforeEach, describe, expect, it } from "vitest"
import {
  type Fetch,
  type FetchResponse,
  IntakeClient,
  IntakeConnectionError,
  IntakeError
} from "../src/index.js"

interface Sent {
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
}

const answer = (status: number, body: unknown, headers: Record<string, string> = {}): FetchResponse => ({
  status,
  headers: { get: (name) => headers[name.toLowerCase()] ?? null },
  text: async () => (typeof body === "string" ? body : JSON.stringify(body))
})

/** A fetch that answers from a script, one entry per call, and records what was sent. */
const scripted = (script: ReadonlyArray<FetchResponse | Error>) => {
  const sent: Array<Sent> = []
  const fetch: Fetch = async (url, init) => {
    sent.push({ url, method: init.method, headers: init.headers })
    const next = script[sent.length - 1]
    if (next === undefined) throw new Error("unscripted call")
    if (next instanceof Error) throw next
    return next
  }
  return { fetch, sent }
}

const created = answer(201, {
  success: true,
  data: { submission: { id: "sub_1", status: "COMPLETED", created_at: "2026-11-21T10:00:00.000Z" } }
})
/** The waits before retries, in milliseconds, as the clients of these tests asked for them (none waits). */
let slept: Array<number> = []
beforeEach(() => {
  slept = []
})
const client = (fetch: Fetch) =>
  new IntakeClient({
    apiKey: "svc_live_test",
    baseUrl: "http://127.0.0.1:1",
    fetch,
    retryDelayMs: 1,
    sleep: async (ms) => {
      slept.push(ms)
    }
  })

describe("retries", () => {
  it("retries a POST after a network error and a 503 with the same generated Idempotency-Key", async () => {
    const { fetch, sent } = scripted([
      new TypeError("fetch failed"),
      answer(503, "<html>bad gateway</html>"),
      created
    ])
    const submission = await client(fetch).createSubmission("bot_1", { data: { name: "Ada" } })
    expect(submission.id).toBe("sub_1")
    const keys = sent.map((request) => request.headers["idempotency-key"])
    expect(keys).toHaveLength(3)
    expect(new Set(keys).size).toBe(1)
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("uses the Idempotency-Key it is given", async () => {
    const { fetch, sent } = scripted([created])
    await client(fetch).createSubmission("bot_1", { data: {} }, { idempotencyKey: "order-42" })
    expect(sent[0]?.headers["idempotency-key"]).toBe("order-42")
  })

  it("waits out Retry-After on a 429 rate_limit_exceeded", async () => {
    const limited = answer(
      429,
      {
        success: false,
        error: { code: "rate_limit_exceeded", message: "slow down", details: { retry_after: 1 } }
      },
      { "retry-after": "1" }
    )
    const { fetch, sent } = scripted([
      limited,
      answer(200, { success: true, data: { id: "wh_1", deleted: true } })
    ])
    await client(fetch).deleteWebhook("wh_1")
    expect(sent).toHaveLength(2)
    expect(slept).toEqual([1_000])
  })

  it("throws, typed by code, what a retry cannot fix: a quota, a Retry-After too long, a 404", async () => {
    const quota = answer(429, {
      success: false,
      error: {
        code: "plan_limit_exceeded",
        message: "quota",
        details: { resource: "submissions", current: 100, max: 100 }
      }
    })
    const { fetch, sent } = scripted([quota])
    const error = await client(fetch)
      .createSubmission("bot_1", { data: {} })
      .catch((e: unknown) => e)
    expect(sent).toHaveLength(1)
    expect(error).toBeInstanceOf(IntakeError)
    if (error instanceof IntakeError && error.error.code === "plan_limit_exceeded") {
      expect(error.error.details.max).toBe(100)
    } else expect.fail("not a plan_limit_exceeded")

    const tooLong = scripted([
      answer(
        429,
        {
          success: false,
          error: { code: "rate_limit_exceeded", message: "", details: { retry_after: 3600 } }
        },
        { "retry-after": "3600" }
      )
    ])
    await expect(client(tooLong.fetch).listWebhooks()).rejects.toMatchObject({ status: 429 })

    const missing = scripted([
      answer(404, {
        success: false,
        error: { code: "resource_not_found", message: "", details: { resource: "webhook" } }
      })
    ])
    await expect(client(missing.fetch).getWebhook("wh_x")).rejects.toMatchObject({
      error: { code: "resource_not_found", details: { resource: "webhook" } }
    })
  })

  it("gives up after maxRetries with a connection error", async () => {
    const { fetch, sent } = scripted([new TypeError("a"), new TypeError("b"), new TypeError("c")])
    await expect(client(fetch).listIntakeBots()).rejects.toBeInstanceOf(IntakeConnectionError)
    expect(sent).toHaveLength(3)
  })
})

describe("pagination", () => {
  it("follows next_cursor across pages with for await, keeping the other parameters", async () => {
    const page = (ids: ReadonlyArray<string>, next: string | null) =>
      answer(200, {
        success: true,
        data: {
          webhooks: ids.map((id) => ({ id })),
          pagination: { has_more: next !== null, next_cursor: next }
        }
      })
    const { fetch, sent } = scripted([page(["wh_3", "wh_2"], "c1"), page(["wh_1"], null)])
    const ids: Array<string> = []
    for await (const webhook of client(fetch).listWebhooks({ limit: 2 })) ids.push(webhook.id)
    expect(ids).toEqual(["wh_3", "wh_2", "wh_1"])
    expect(sent.map((request) => new URL(request.url).search)).toEqual(["?limit=2", "?limit=2&cursor=c1"])
  })
})

describe("recovery and the delivery log", () => {
  it("recovers with an Idempotency-Key, reads one delivery, and sends the log's filters", async () => {
    const recovery = { queued: 3, since: "2026-11-20T08:00:00.000Z", until: "2026-11-21T10:00:00.000Z" }
    const delivery = { id: "dlv_1", status: "skipped" }
    const { fetch, sent } = scripted([
      answer(200, { success: true, data: { recovery } }),
      answer(200, { success: true, data: { delivery } }),
      answer(200, {
        success: true,
        data: { deliveries: [delivery], pagination: { has_more: false, next_cursor: null } }
      })
    ])
    const intake = client(fetch)
    expect(await intake.recoverWebhook("wh_1", { since: recovery.since }, { idempotencyKey: "r-1" })).toEqual(
      recovery
    )
    expect(await intake.getDelivery("wh_1", "dlv_1")).toEqual(delivery)
    const page = await intake.listDeliveries("wh_1", { status: "skipped", submission_id: "sub_9" })
    expect(page.deliveries).toEqual([delivery])
    expect(
      sent.map((request) => [request.method, new URL(request.url).pathname + new URL(request.url).search])
    ).toEqual([
      ["POST", "/v1/webhooks/wh_1/recover"],
      ["GET", "/v1/webhooks/wh_1/deliveries/dlv_1"],
      ["GET", "/v1/webhooks/wh_1/deliveries?status=skipped&submission_id=sub_9"]
    ])
    expect(sent[0]!.headers["idempotency-key"]).toBe("r-1")
  })
})
