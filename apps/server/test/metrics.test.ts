/**
 * GET /metrics (docs/operations.md, Metrics) over a real socket: the request counters move
 * as requests are served, by route template; the delivery counters as the dispatcher
 * delivers; the backlog shows queued attempts; INTAKE_METRICS_TOKEN guards it; and every
 * metric the Grafana dashboard of docs/grafana/intake.json queries is exported.
 */
import { readFileSync } from "node:fs"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { localReceiver } from "./receiver.js"
import { dataOf, expectError, provision, realServer } from "./support.js"

interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** The samples of a text exposition (comments skipped). */
const samplesOf = (text: string): Array<Sample> =>
  text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const found = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (found === null) throw new Error(`not a sample line: ${line}`)
      const labels: Record<string, string> = {}
      for (const pair of (found[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
        labels[pair[1]!] = pair[2]!
      return { name: found[1]!, labels, value: Number(found[3]) }
    })

/** The value of the sample `name` whose labels include `labels`; 0 when there is none yet. */
const sampleValue = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)

const scrape = (baseUrl: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/metrics`, { headers })
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      text: await response.text()
    }
  })

const samples = (baseUrl: string) =>
  Effect.map(scrape(baseUrl), (answer) => {
    expect(answer.status, answer.text).toBe(200)
    return samplesOf(answer.text)
  })

/** Scrapes until `check` holds (the dispatcher counts an attempt once it is made), at most 5 s. */
const scrapeUntil = (baseUrl: string, check: (samples: ReadonlyArray<Sample>) => boolean) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 5_000
    for (;;) {
      const found = yield* samples(baseUrl)
      if (check(found)) return found
      if (Date.now() > deadline) return yield* Effect.dieMessage("the metrics never showed it")
      yield* Effect.sleep("20 millis")
    }
  })

const HOUR = 3_600_000

layer(realServer({ allowPrivateNetworks: true, retrySchedule: [HOUR] }), { excludeTestServices: true })(
  "metrics",
  (it) => {
    it.effect("counts requests by route template, method and status, without a key", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const first = yield* scrape(baseUrl)
        expect(first.status).toBe(200)
        expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
        const before = samplesOf(first.text)
        for (let i = 0; i < 2; i++)
          dataOf(yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}`, { key: tenant.key }))
        expect((yield* call(baseUrl, "GET", "/v1/intake-bots/ib_nope", { key: tenant.key })).status).toBe(404)
        expect((yield* call(baseUrl, "GET", "/v1/no-such-route/abc123", { key: tenant.key })).status).toBe(
          404
        )
        const answer = yield* scrape(baseUrl)
        const after = samplesOf(answer.text)
        const delta = (name: string, labels: Record<string, string>) =>
          sampleValue(after, name, labels) - sampleValue(before, name, labels)
        const bot = { route: "/v1/intake-bots/:id", method: "GET" }
        expect(delta("intake_http_requests_total", { ...bot, status: "200" })).toBe(2)
        expect(delta("intake_http_requests_total", { ...bot, status: "404" })).toBe(1)
        expect(
          delta("intake_http_requests_total", { route: "unmatched", method: "GET", status: "404" })
        ).toBe(1)
        expect(delta("intake_http_request_duration_seconds_count", { route: "/v1/intake-bots/:id" })).toBe(3)
        expect(
          delta("intake_http_request_duration_seconds_bucket", { route: "/v1/intake-bots/:id", le: "+Inf" })
        ).toBe(3)
        // The scrape before counts too, under its own route.
        expect(delta("intake_http_requests_total", { route: "/metrics", method: "GET", status: "200" })).toBe(
          1
        )
        // Route templates only: no id or raw path becomes a label value.
        for (const raw of [tenant.botId, "ib_nope", "no-such-route", "abc123"])
          expect(answer.text).not.toContain(raw)
        // The process's own, and the event loop's lag.
        expect(sampleValue(after, "process_cpu_user_seconds_total")).toBeGreaterThan(0)
        expect(after.some((s) => s.name === "intake_event_loop_lag_seconds")).toBe(true)
      })
    )

    it.scoped(
      "delivery counters move as deliveries succeed and fail; the backlog shows the retry queued",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const receiver = yield* localReceiver([200])
          dataOf(
            yield* call(baseUrl, "POST", "/v1/webhooks", {
              key: tenant.key,
              body: { url: receiver.url, events: ["submission.completed"] }
            })
          )
          const before = yield* samples(baseUrl)
          const deliveries = (found: ReadonlyArray<Sample>, outcome: string) =>
            sampleValue(found, "intake_webhook_deliveries_total", { outcome }) -
            sampleValue(before, "intake_webhook_deliveries_total", { outcome })
          const submit = () =>
            call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
              key: tenant.key,
              body: { data: { name: "Ada", email: "ada@example.com" } }
            })
          dataOf(yield* submit(), 201)
          yield* scrapeUntil(baseUrl, (found) => deliveries(found, "succeeded") === 1)
          receiver.answerWith([500])
          dataOf(yield* submit(), 201)
          const after = yield* scrapeUntil(baseUrl, (found) => deliveries(found, "failed") === 1)
          expect(deliveries(after, "succeeded")).toBe(1)
          expect(deliveries(after, "skipped")).toBe(0)
          expect(
            sampleValue(after, "intake_webhook_delivery_duration_seconds_count") -
              sampleValue(before, "intake_webhook_delivery_duration_seconds_count")
          ).toBe(2)
          // The failed attempt's retry waits an hour: queued, and not late, once the attempt is
          // written down (the counter moves when it is made, a batch write later).
          const queued = yield* scrapeUntil(
            baseUrl,
            (found) =>
              sampleValue(found, "intake_webhook_backlog") === 1 &&
              sampleValue(found, "intake_webhook_backlog_oldest_seconds") === 0
          )
          expect(sampleValue(queued, "intake_webhook_circuits_open")).toBe(0)
        })
    )

    it.effect("every metric the Grafana dashboard queries is exported", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const { text } = yield* scrape(baseUrl)
        const families = new Set(
          text
            .split("\n")
            .filter((line) => line.startsWith("# TYPE "))
            .flatMap((line) => {
              const [, , name, type] = line.split(" ")
              return type === "histogram" ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!]
            })
        )
        const dashboard = JSON.parse(
          readFileSync(new URL("../../../docs/grafana/intake.json", import.meta.url), "utf8")
        )
        const expressions: Array<string> = []
        const walk = (node: unknown): void => {
          if (Array.isArray(node)) node.forEach(walk)
          else if (typeof node === "object" && node !== null)
            for (const [key, value] of Object.entries(node)) {
              if (key === "expr" && typeof value === "string") expressions.push(value)
              else walk(value)
            }
        }
        walk(dashboard)
        expect(expressions.length).toBeGreaterThan(5)
        const used = new Set(
          expressions.flatMap((expr) => expr.match(/\b(?:intake|process|nodejs)_[a-z_]+\b/g) ?? [])
        )
        expect([...used].filter((name) => !families.has(name))).toEqual([])
        for (const family of [
          "intake_http_requests_total",
          "intake_webhook_backlog",
          "intake_db_pool_connections"
        ])
          expect(used.has(family), family).toBe(true)
      })
    )
  }
)

layer(realServer({ metricsToken: "metrics-token-for-tests" }), { excludeTestServices: true })(
  "metrics behind INTAKE_METRICS_TOKEN",
  (it) => {
    it.effect("answers 401 without the token or with another, the metrics with it", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const missing = yield* call(baseUrl, "GET", "/metrics")
        expectError(missing, 401, "authentication_required")
        expect(missing.headers.get("www-authenticate")).toBe("Bearer")
        expectError(
          yield* call(baseUrl, "GET", "/metrics", { key: "metrics-token-for-test" }),
          401,
          "authentication_required"
        )
        const allowed = yield* scrape(baseUrl, { authorization: "Bearer metrics-token-for-tests" })
        expect(allowed.status).toBe(200)
        expect(allowed.text).toContain("# TYPE intake_http_requests_total counter")
        // /healthz stays open.
        expect((yield* call(baseUrl, "GET", "/healthz")).status).toBe(200)
      })
    )
  }
)
