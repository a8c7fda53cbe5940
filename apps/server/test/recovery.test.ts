/**
 * Recovery and the delivery log over HTTP (docs/webhooks.md): the real server with its
 * in-process dispatcher and a local receiver on 127.0.0.1. Also run on PostgreSQL and PGlite
 * (the server-postgres and server-pglite projects).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { BaseUrl, call } from "./harness.js"
import { eventually, localReceiver } from "./receiver.js"
import { dataOf, expectError, expectHeaders, provision, realServer, type Tenant } from "./support.js"

interface LoggedDelivery {
  readonly id: string
  readonly event_id: string
  readonly event_type: string
  readonly status: string
  readonly trigger: string
  readonly attempt: number
  readonly error: string | null
  readonly sent_at: string | null
  readonly next_retry_at: string | null
  readonly created_at: string
}

const givenWebhook = (baseUrl: string, key: string, url: string, events: ReadonlyArray<string>) =>
  Effect.map(
    call(baseUrl, "POST", "/v1/webhooks", { key, body: { url, events } }),
    (answer) => dataOf(answer).webhook as { id: string; secret: string }
  )

const submit = (baseUrl: string, tenant: Tenant, email: string) =>
  Effect.map(
    call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
      key: tenant.key,
      body: { data: { name: "Ada Lovelace", email, topic: "sales" } }
    }),
    (answer) => dataOf(answer, 201).submission as { id: string; created_at: string }
  )

/** Every attempt of the log with these query parameters, all pages. */
const logOf = (baseUrl: string, key: string, webhookId: string, query: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const all: Array<LoggedDelivery> = []
    let cursor: string | null = null
    do {
      const params = new URLSearchParams({ ...query, limit: "100", ...(cursor === null ? {} : { cursor }) })
      const data = dataOf(
        yield* call(baseUrl, "GET", `/v1/webhooks/${webhookId}/deliveries?${params}`, { key })
      )
      all.push(...data.deliveries)
      cursor = data.pagination.next_cursor
    } while (cursor !== null)
    return all
  })

const statusOf = (baseUrl: string, key: string, webhookId: string) =>
  Effect.map(call(baseUrl, "GET", `/v1/webhooks/${webhookId}`, { key }), (a) => dataOf(a).webhook.status)

/** Waits (real time) until the effect's answer satisfies `done`. */
const until = <A>(read: Effect.Effect<A>, done: (value: A) => boolean, timeoutMs = 30_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* read
      if (done(value)) return value
      if (Date.now() > deadline) return yield* Effect.dieMessage(`timed out; last: ${JSON.stringify(value)}`)
      yield* Effect.sleep("25 millis")
    }
  })

const recover = (baseUrl: string, key: string, webhookId: string, body: unknown, idempotencyKey?: string) =>
  call(baseUrl, "POST", `/v1/webhooks/${webhookId}/recover`, {
    key,
    body,
    ...(idempotencyKey === undefined ? {} : { headers: { "idempotency-key": idempotencyKey } })
  })

// The circuit breaker is kept out of these tests' way: they fail an endpoint many times on purpose.
layer(
  realServer({
    allowPrivateNetworks: true,
    retrySchedule: [100, 200],
    dispatcherPollMs: 50,
    isolation: { circuitFailures: 1_000 }
  }),
  {
    excludeTestServices: true,
    timeout: 120_000
  }
)("webhook recovery and the delivery log", (it) => {
  it.scoped(
    "a receiver down for 200 events (disabled by a 410 midway), then back: recover delivers each once more, nothing it had twice",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const key = tenant.key
        const receiver = yield* localReceiver([204])
        const webhook = yield* givenWebhook(baseUrl, key, receiver.url, ["submission.completed"])
        const since = new Date(Date.now() - 1_000).toISOString()

        // Received before the outage: these must never arrive twice.
        for (let i = 0; i < 5; i++) yield* submit(baseUrl, tenant, `before-${i}@example.com`)
        yield* eventually(() => receiver.received.length === 5, 10_000)

        // The outage: the receiver fails (503) for 100 events, then answers 410 Gone, which
        // disables the endpoint; the 99 events after that are recorded as skipped.
        receiver.answerWith([503])
        const outage = []
        for (let i = 0; i < 100; i++) outage.push(yield* submit(baseUrl, tenant, `down-${i}@example.com`))
        receiver.answerWith([410])
        outage.push(yield* submit(baseUrl, tenant, "gone@example.com"))
        yield* until(statusOf(baseUrl, key, webhook.id), (status) => status === "disabled")
        for (let i = 0; i < 99; i++)
          outage.push(yield* submit(baseUrl, tenant, `while-disabled-${i}@example.com`))
        yield* until(
          logOf(baseUrl, key, webhook.id, { status: "pending" }),
          (pending) => pending.length === 0
        )

        const skipped = yield* logOf(baseUrl, key, webhook.id, { status: "skipped" })
        // At least those 99 (a retry of an earlier event may have met the 410 first).
        expect(skipped.length).toBeGreaterThanOrEqual(99)
        for (const attempt of skipped)
          expect(attempt).toMatchObject({
            error: "not sent: the webhook is disabled",
            sent_at: null,
            trigger: "event"
          })
        const succeeded = yield* logOf(baseUrl, key, webhook.id, { status: "succeeded" })
        expect(succeeded).toHaveLength(5)

        // Not while disabled: 409, nothing queued.
        const refused = yield* recover(baseUrl, key, webhook.id, { since })
        expectError(refused, 409, "conflict")
        expectHeaders(refused)

        // Back: re-activate, then recover.
        receiver.answerWith([204])
        dataOf(
          yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, { key, body: { status: "active" } })
        )
        const received = receiver.received.length
        const answer = yield* recover(baseUrl, key, webhook.id, { since }, "recover-1")
        expectHeaders(answer)
        const { recovery } = dataOf(answer)
        expect(recovery.queued).toBe(200)
        expect(recovery.since).toBe(since)
        expect(Date.parse(recovery.until)).toBeLessThanOrEqual(Date.now())
        // The same key replays the answer; another call finds everything pending.
        const replay = yield* recover(baseUrl, key, webhook.id, { since }, "recover-1")
        expect(replay.body).toEqual(answer.body)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(dataOf(yield* recover(baseUrl, key, webhook.id, { since })).recovery.queued).toBe(0)

        yield* eventually(() => receiver.received.length >= received + 200, 60_000)
        yield* until(
          logOf(baseUrl, key, webhook.id, { status: "pending" }),
          (pending) => pending.length === 0
        )
        yield* Effect.sleep("300 millis")
        const recovered = receiver.received.slice(received)
        expect(recovered).toHaveLength(200)
        const webhookIds = recovered.map((request) => request.headers["webhook-id"] as string)
        expect(new Set(webhookIds).size).toBe(200)
        const verifier = new Webhook(webhook.secret)
        for (const request of recovered)
          verifier.verify(request.body, request.headers as Record<string, string>)
        expect(recovered.map((request) => request.payload.data.submission.id).sort()).toEqual(
          outage.map((submission) => submission.id).sort()
        )
        // Nothing received before the outage came again.
        const firstIds = new Set(
          receiver.received.slice(0, 5).map((request) => request.headers["webhook-id"])
        )
        expect(webhookIds.filter((id) => firstIds.has(id))).toEqual([])
        const everySuccess = yield* logOf(baseUrl, key, webhook.id, { status: "succeeded" })
        expect(everySuccess).toHaveLength(205)
        expect(everySuccess.filter((d) => d.trigger === "recover")).toHaveLength(200)
        for (const d of everySuccess) expect(d.sent_at).not.toBeNull()
        // All received now: recover has nothing left to queue.
        expect(dataOf(yield* recover(baseUrl, key, webhook.id, { since })).recovery.queued).toBe(0)
        expect(receiver.received).toHaveLength(received + 200)
      }),
    // 200 submissions and 600 attempts: the embedded database on a busy machine takes its time.
    120_000
  )

  it.scoped("concurrent recoveries of one endpoint queue each missed event once between them", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const key = tenant.key
      const receiver = yield* localReceiver([204])
      const webhook = yield* givenWebhook(baseUrl, key, receiver.url, ["submission.completed"])
      const since = new Date(Date.now() - 1_000).toISOString()
      dataOf(yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, { key, body: { status: "paused" } }))
      for (let i = 0; i < 20; i++) yield* submit(baseUrl, tenant, `paused-${i}@example.com`)
      expect(yield* logOf(baseUrl, key, webhook.id, { status: "skipped" })).toHaveLength(20)
      dataOf(yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, { key, body: { status: "active" } }))

      const answers = yield* Effect.all(
        Array.from({ length: 4 }, () => recover(baseUrl, key, webhook.id, { since })),
        { concurrency: "unbounded" }
      )
      const queued = answers.map((answer) => dataOf(answer).recovery.queued as number)
      expect(queued.reduce((a, b) => a + b, 0)).toBe(20)
      yield* eventually(() => receiver.received.length >= 20, 20_000)
      yield* until(logOf(baseUrl, key, webhook.id, { status: "pending" }), (pending) => pending.length === 0)
      expect(new Set(receiver.received.map((request) => request.headers["webhook-id"])).size).toBe(20)
      expect(receiver.received).toHaveLength(20)
    })
  )

  it.scoped(
    "recover: bad bodies are 400, a paused endpoint 409, another workspace's 404, the scope 403",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver([204])
        const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
        const path = (body: unknown) => recover(baseUrl, tenant.key, webhook.id, body)
        const issuesOf = (details: unknown) =>
          (details as { issues: Array<{ path: string }> }).issues.map((i) => i.path)

        expect(issuesOf(expectError(yield* path({}), 400, "validation_failed"))).toEqual(["since"])
        expect(issuesOf(expectError(yield* path({ since: "yesterday" }), 400, "validation_failed"))).toEqual([
          "since"
        ])
        expect(
          issuesOf(expectError(yield* path({ since: "2026-02-30T00:00:00Z" }), 400, "validation_failed"))
        ).toEqual(["since"])
        expect(
          issuesOf(
            expectError(
              yield* path({ since: "2026-11-20T10:00:00Z", until: "2026-11-20T09:00:00Z" }),
              400,
              "validation_failed"
            )
          )
        ).toEqual(["since"])
        const unknown = expectError(
          yield* path({ since: "2026-11-20T10:00:00Z", from: "x" }),
          400,
          "validation_failed"
        )
        expect(unknown).toMatchObject({ unknown_keys: ["from"] })
        // A window from before anything was kept is simply empty.
        expect(
          dataOf(yield* path({ since: "1970-01-01T00:00:00Z", until: "1971-01-01T00:00:00Z" })).recovery
        ).toEqual({
          queued: 0,
          since: "1970-01-01T00:00:00.000Z",
          until: "1971-01-01T00:00:00.000Z"
        })

        dataOf(
          yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, {
            key: tenant.key,
            body: { status: "paused" }
          })
        )
        const paused = yield* path({ since: "2026-11-20T10:00:00Z" })
        expectError(paused, 409, "conflict")
        expect((paused.body as { error: { message: string } }).error.message).toMatch(/paused.*active/)

        const stranger = yield* provision(baseUrl)
        const foreign = yield* recover(baseUrl, stranger.key, webhook.id, { since: "2026-11-20T10:00:00Z" })
        expect(expectError(foreign, 404, "resource_not_found")).toEqual({ resource: "webhook" })
        const readOnly = yield* provision(baseUrl, { scopes: ["read:submissions"] })
        expectError(
          yield* recover(baseUrl, readOnly.key, webhook.id, { since: "2026-11-20T10:00:00Z" }),
          403,
          "insufficient_scopes"
        )
      })
  )

  it.scoped(
    "an inverted date range is 400 on every list taking one, as on recover; equal bounds are one instant",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver([204])
        const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
        const later = "2026-11-20T10:00:00.000Z"
        const earlier = "2026-11-20T09:00:00.000Z"

        const recovered = expectError(
          yield* recover(baseUrl, tenant.key, webhook.id, { since: later, until: earlier }),
          400,
          "validation_failed"
        )
        expect(recovered).toEqual({ issues: [{ path: "since", message: "must not be after until" }] })
        for (const list of [
          `/v1/intake-bots/${tenant.botId}/submissions`,
          `/v1/webhooks/${webhook.id}/deliveries`
        ]) {
          const inverted = yield* call(
            baseUrl,
            "GET",
            `${list}?created_after=${later}&created_before=${earlier}`,
            {
              key: tenant.key
            }
          )
          expect(expectError(inverted, 400, "validation_failed")).toEqual({
            issues: [{ path: "created_after", message: "must not be after created_before" }]
          })
          expectHeaders(inverted)
          // Checked with the parameters, before the operation: a missing resource is still 400.
          const missing = list.replace(/(bot|wh)_[^/]+/, "$1_missing")
          const beforeLookup = yield* call(
            baseUrl,
            "GET",
            `${missing}?created_after=${later}&created_before=${earlier}`,
            { key: tenant.key }
          )
          expectError(beforeLookup, 400, "validation_failed")
          const instant = yield* call(
            baseUrl,
            "GET",
            `${list}?created_after=${later}&created_before=${later}`,
            {
              key: tenant.key
            }
          )
          expect(instant.status).toBe(200)
        }
      })
  )

  it.scoped("the delivery log: filters, one delivery by id, sent_at and next_retry_at", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const key = tenant.key
      const receiver = yield* localReceiver([204])
      const webhook = yield* givenWebhook(baseUrl, key, receiver.url, [
        "submission.completed",
        "contact.created"
      ])
      const first = yield* submit(baseUrl, tenant, "first@example.com")
      yield* eventually(() => receiver.received.length === 2)
      // The second one fails for good (500, then the two retries).
      receiver.answerWith([500])
      const second = yield* submit(baseUrl, tenant, "second@example.com")
      yield* eventually(() => receiver.received.length === 8, 10_000)
      const all = yield* until(
        logOf(baseUrl, key, webhook.id),
        (log) => log.length === 8 && log.every((d) => d.status !== "pending")
      )

      const ofFirst = yield* logOf(baseUrl, key, webhook.id, { submission_id: first.id })
      expect(ofFirst.map((d) => [d.event_type, d.status]).sort()).toEqual([
        ["contact.created", "succeeded"],
        ["submission.completed", "succeeded"]
      ])
      const ofSecond = yield* logOf(baseUrl, key, webhook.id, { submission_id: second.id, status: "failed" })
      expect(ofSecond).toHaveLength(6)
      expect(
        yield* logOf(baseUrl, key, webhook.id, { event_type: "contact.created", status: "succeeded" })
      ).toEqual(all.filter((d) => d.event_type === "contact.created" && d.status === "succeeded"))
      expect(yield* logOf(baseUrl, key, webhook.id, { created_before: first.created_at })).toEqual(
        all.filter((d) => Date.parse(d.created_at) <= Date.parse(first.created_at))
      )
      expect(yield* logOf(baseUrl, key, webhook.id, { created_after: second.created_at })).toEqual(
        all.filter((d) => Date.parse(d.created_at) >= Date.parse(second.created_at))
      )
      for (const d of all) expect(Date.parse(d.sent_at!)).toBeGreaterThanOrEqual(Date.parse(d.created_at))
      // A failed attempt names when its retry is due; the retry was sent then or later.
      const chain = ofSecond
        .filter((d) => d.event_type === "submission.completed")
        .sort((a, b) => a.attempt - b.attempt)
      expect(Date.parse(chain[1]!.sent_at!)).toBeGreaterThanOrEqual(Date.parse(chain[0]!.next_retry_at!))

      // Bad filters are 400, each at its name; a cursor keeps to its filters.
      const bad = yield* call(
        baseUrl,
        "GET",
        `/v1/webhooks/${webhook.id}/deliveries?status=lost&event_type=x&created_after=today`,
        { key }
      )
      const issues = (expectError(bad, 400, "validation_failed") as { issues: Array<{ path: string }> })
        .issues
      expect(issues.map((i) => i.path).sort()).toEqual(["created_after", "event_type", "status"])
      const page = dataOf(
        yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries?status=failed&limit=1`, { key })
      )
      const cursor = encodeURIComponent(page.pagination.next_cursor)
      dataOf(
        yield* call(
          baseUrl,
          "GET",
          `/v1/webhooks/${webhook.id}/deliveries?status=failed&limit=1&cursor=${cursor}`,
          {
            key
          }
        )
      )
      expectError(
        yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries?limit=1&cursor=${cursor}`, {
          key
        }),
        400,
        "validation_failed"
      )

      // One delivery.
      const one = yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries/${all[0]!.id}`, { key })
      expectHeaders(one)
      expect(dataOf(one).delivery).toEqual(all[0])
      const other = yield* givenWebhook(baseUrl, key, receiver.url, ["submission.completed"])
      expect(
        expectError(
          yield* call(baseUrl, "GET", `/v1/webhooks/${other.id}/deliveries/${all[0]!.id}`, { key }),
          404,
          "resource_not_found"
        )
      ).toEqual({ resource: "delivery" })
      const stranger = yield* provision(baseUrl)
      expect(
        expectError(
          yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries/${all[0]!.id}`, {
            key: stranger.key
          }),
          404,
          "resource_not_found"
        )
      ).toEqual({ resource: "webhook" })

      // A pending attempt (the first, or a retry waiting for its time) shows when it is due.
      receiver.answerWith([503])
      yield* submit(baseUrl, tenant, "third@example.com")
      const pending = yield* until(
        logOf(baseUrl, key, webhook.id, { status: "pending" }),
        (log) => log.length > 0
      )
      for (const d of pending) {
        expect(d.next_retry_at).not.toBeNull()
        expect(d.sent_at).toBeNull()
      }
    })
  )
})
