/** The real server on the embedded runtime, provisioned through the admin API. */

import { expect } from "@effect/vitest"
import { DeliveryIsolation } from "@intake/domain"
import type { MemoryDatabase } from "@intake/memory/internal"
import { layerPglite } from "@intake/postgres"
import { PostgresTestDatabase } from "@intake/postgres/testing"
import { Clock, Effect, Layer } from "effect"
import type { CorsOrigins } from "../src/cors.js"
import { embeddedRuntime, type RuntimeOptions, sqlRuntime } from "../src/runtime.js"
import type { Answer } from "./harness.js"
import { ADMIN_TOKEN, call, testServer } from "./harness.js"

/**
 * Server time = wall time + `shift.millis`, so a test can move past a key's expiry or a
 * rate-limit window without sleeping.
 */
export const shift = { millis: 0 }
const base = Clock.make()
const ShiftedClock: Clock.Clock = {
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + shift.millis,
  currentTimeMillis: Effect.sync(() => base.unsafeCurrentTimeMillis() + shift.millis),
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(shift.millis) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => base.unsafeCurrentTimeNanos() + BigInt(shift.millis) * 1_000_000n),
  sleep: (duration) => base.sleep(duration)
}

/**
 * The store under the HTTP tests: in-memory by default; INTAKE_SERVER_TEST_STORE=postgres
 * puts each test layer on a fresh PostgreSQL database, =pglite on an in-memory PGlite.
 */
type Services = Exclude<Layer.Layer.Success<ReturnType<typeof embeddedRuntime>>, MemoryDatabase>

export const runtimeFor = (options: RuntimeOptions): Layer.Layer<Services, unknown> => {
  switch (process.env.INTAKE_SERVER_TEST_STORE) {
    case "postgres":
      return sqlRuntime(PostgresTestDatabase(), "PostgreSQL", options)
    case "pglite":
      return sqlRuntime(layerPglite({}), "PGlite", options)
    default:
      return embeddedRuntime(options)
  }
}

export const realServer = (
  options: {
    readonly allowPrivateNetworks?: boolean
    readonly admin?: boolean
    /** WEBHOOK_RETRY_SCHEDULE in milliseconds. */
    readonly retrySchedule?: ReadonlyArray<number>
    readonly corsOrigins?: CorsOrigins
    /** The in-process dispatcher's longest sleep (1 s by default). */
    readonly dispatcherPollMs?: number
    /** Per-endpoint isolation beyond the defaults (docs/webhooks.md, Isolation). */
    readonly isolation?: Partial<DeliveryIsolation.IsolationPolicy>
    /** INTAKE_METRICS_TOKEN. */
    readonly metricsToken?: string
  } = {}
) =>
  testServer(
    runtimeFor({
      webhookAllowPrivateNetworks: options.allowPrivateNetworks ?? false,
      ...(options.retrySchedule === undefined ? {} : { webhookRetrySchedule: options.retrySchedule }),
      ...(options.dispatcherPollMs === undefined
        ? {}
        : { dispatcher: { pollIntervalMs: options.dispatcherPollMs } }),
      ...(options.isolation === undefined
        ? {}
        : { webhookIsolation: { ...DeliveryIsolation.DEFAULT_ISOLATION, ...options.isolation } })
    }),
    {
      admin: options.admin ?? true,
      ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
      ...(options.metricsToken === undefined ? {} : { metricsToken: options.metricsToken })
    }
  ).pipe(Layer.provide(Layer.setClock(ShiftedClock)))

export const admin = (baseUrl: string, method: string, path: string, body?: unknown) =>
  call(baseUrl, method, path, { key: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) })

/** A parsed JSON body, read by tests without ceremony (an assertion fails when a field is wrong). */
// biome-ignore lint/suspicious/noExplicitAny: JSON answers are checked by assertions, not by types
type Json = any

/** The `data` of a success, failing the test when the answer is not one. */
export const dataOf = (answer: Answer, status = 200) => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status)
  expect(answer.body).toMatchObject({ success: true })
  return (answer.body as { data: Record<string, Json> }).data
}

export const ALL_SCOPES = [
  "read:intake-bots",
  "write:intake-bots",
  "read:submissions",
  "read:contacts",
  "read:records",
  "manage:webhooks"
] as const

export const contactFormSchema = [
  { name: "name", label: "Name", type: "text", required: true },
  { name: "email", label: "Email", type: "email", required: true },
  { name: "topic", label: "Topic", type: "select", options: ["sales", "support"] },
  { name: "message", label: "Message", type: "long_text" }
]

export interface Tenant {
  readonly workspaceId: string
  readonly key: string
  readonly keyId: string
  readonly botId: string
}

/** A workspace with a key and a "Contact form" bot; a high rate limit unless one is given. */
export const provision = (
  baseUrl: string,
  options: {
    readonly plan?: "free" | "pro" | "business"
    readonly scopes?: ReadonlyArray<string>
    readonly rateLimitPerMinute?: number | null
    readonly botSchema?: ReadonlyArray<unknown>
  } = {}
) =>
  Effect.gen(function* () {
    const workspace = dataOf(
      yield* admin(baseUrl, "POST", "/admin/workspaces", { name: "Acme", plan: options.plan ?? "pro" }),
      201
    ).workspace
    dataOf(
      yield* admin(baseUrl, "PATCH", `/admin/workspaces/${workspace.id}`, {
        rate_limit_per_minute: options.rateLimitPerMinute === undefined ? 100_000 : options.rateLimitPerMinute
      })
    )
    const bot = dataOf(
      yield* admin(baseUrl, "POST", `/admin/workspaces/${workspace.id}/intake-bots`, {
        name: "Contact form",
        schema: options.botSchema ?? contactFormSchema
      }),
      201
    ).intake_bot
    const plan = options.plan ?? "pro"
    let key = { id: "", key: "" }
    if (plan !== "free") {
      key = dataOf(
        yield* admin(baseUrl, "POST", `/admin/workspaces/${workspace.id}/api-keys`, {
          scopes: options.scopes ?? ALL_SCOPES
        }),
        201
      ).api_key
    }
    return { workspaceId: workspace.id, key: key.key, keyId: key.id, botId: bot.id } satisfies Tenant
  })

/** Envelope of an error answer with the given status and code. */
export const expectError = (answer: Answer, status: number, code: string) => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status)
  expect(answer.body).toMatchObject({ success: false, error: { code, message: expect.any(String) } })
  return (answer.body as { error: { details?: Record<string, Json> } }).error.details
}

const seenRequestIds = new Set<string>()

/** X-Request-Id (unique) and, on /v1, every rate-limit header, consistent with each other. */
export const expectHeaders = (answer: Answer, options: { readonly rateLimit?: boolean } = {}) => {
  const id = answer.headers.get("x-request-id")
  expect(id).toMatch(/^req_[0-9a-f]{32}$/)
  expect(seenRequestIds.has(id!)).toBe(false)
  seenRequestIds.add(id!)
  if (options.rateLimit === false) return
  const limit = answer.headers.get("x-ratelimit-limit")
  const remaining = answer.headers.get("x-ratelimit-remaining")
  const reset = answer.headers.get("x-ratelimit-reset")
  expect(limit).toMatch(/^\d+$/)
  expect(remaining).toMatch(/^\d+$/)
  expect(reset).toMatch(/^\d{13}$/)
  expect(answer.headers.get("ratelimit-policy")).toBe(`"default";q=${limit};w=60`)
  expect(answer.headers.get("ratelimit")).toMatch(new RegExp(`^"default";r=${remaining};t=\\d+$`))
}

/** A request (POST unless told) whose body is these exact bytes; `size` is the answer's in bytes. */
export const sendBytes = (
  baseUrl: string,
  path: string,
  bytes: Uint8Array | undefined,
  headers: Record<string, string>,
  method = "POST"
): Effect.Effect<Answer & { readonly size: number }> =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(bytes === undefined ? {} : { body: bytes })
    })
    const text = await response.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {}
    return { status: response.status, headers: response.headers, body, size: Buffer.byteLength(text) }
  })
