/**
 * Model summaries end to end: the real server with INTAKE_SUMMARIZER=openai pointed at a
 * local model server that speaks the OpenAI Responses API (recorded shapes, see
 * @intake/testing's model-server.ts), a local webhook receiver, and the logs captured.
 */
import { expect, it } from "@effect/vitest"
import type { SummarizerConfig } from "@intake/delivery"
import { captureLogs, type ModelBehaviour, modelServer, temporaryDirectory } from "@intake/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { pgliteRuntime, type RuntimeOptions } from "../src/runtime.js"
import { BaseUrl, call, testServer } from "./harness.js"
import { eventually, localReceiver } from "./receiver.js"
import { admin, dataOf, provision, runtimeFor } from "./support.js"

const API_KEY = "sk-proj-intake-test-0123456789-do-not-log"
const BUILT_IN = "Name: Ada Lovelace; Email: ada@example.com; Topic: sales"

const logs = captureLogs()

const summarizer = (url: string, overrides: Partial<SummarizerConfig> = {}): SummarizerConfig => ({
  kind: "openai",
  url,
  model: Option.some("gpt-4.1-mini"),
  apiKey: Option.some(Redacted.make(API_KEY)),
  waitMs: 20_000,
  timeoutMs: 1_000,
  concurrency: 4,
  ...overrides
})

/** The real server on `runtime`, with the logs captured; its base URL. */
const startServer = <E>(runtime: Layer.Layer<never, E, never> | ReturnType<typeof runtimeFor>) =>
  Effect.map(
    Layer.build(testServer(runtime as ReturnType<typeof runtimeFor>).pipe(Layer.provide(logs.layer))),
    (context) => Context.get(context, BaseUrl)
  )

const serverOn = (
  modelUrl: string,
  overrides: Partial<SummarizerConfig> = {},
  options: Partial<RuntimeOptions> = {}
) =>
  startServer(
    runtimeFor({ webhookAllowPrivateNetworks: true, summarizer: summarizer(modelUrl, overrides), ...options })
  )

/** A tenant with a webhook on `receiverUrl` for submission.completed. */
const tenantWithWebhook = (baseUrl: string, receiverUrl: string) =>
  Effect.gen(function* () {
    const tenant = yield* provision(baseUrl)
    dataOf(
      yield* call(baseUrl, "POST", "/v1/webhooks", {
        key: tenant.key,
        body: { url: receiverUrl, events: ["submission.completed"] }
      })
    )
    return tenant
  })

const conversation = [
  { role: "assistant", content: "Hello! What can we do for you?" },
  { role: "user", content: "We need 40 analytical engines delivered to Marylebone before March." }
]

/** A COMPLETED submission with a conversation, as the collector stores it (operator API). */
const submitConversation = (baseUrl: string, botId: string) =>
  Effect.map(
    admin(baseUrl, "POST", `/admin/intake-bots/${botId}/submissions`, {
      data: { name: "Ada Lovelace", email: "ada@example.com", topic: "sales" },
      messages: conversation
    }),
    (answer) => dataOf(answer, 201).submission as { id: string; ai_summary: string }
  )

const storedSummary = (baseUrl: string, key: string, botId: string, id: string) =>
  Effect.map(
    call(baseUrl, "GET", `/v1/intake-bots/${botId}/submissions/${id}`, { key }),
    (answer) => dataOf(answer).submission.ai_summary as string
  )

/** A model that summarizes what the conversation's last user turn said, as a real one would. */
const echoingModel = (delayMs = 0): ModelBehaviour => ({
  kind: "answer",
  delayMs,
  text: (prompt) => {
    const data = JSON.parse(prompt.slice("<submission>".length, -"</submission>".length))
    const said = data.messages.filter((m: { role: string }) => m.role === "user").at(-1).content
    return `**${data.fields[0].value}** writes:\n\u0007"${said}"`
  }
})

it.live(
  "the model's summary lands on the submission and in the submission.completed payload, and says what the messages said",
  () =>
    Effect.gen(function* () {
      const model = yield* modelServer(echoingModel(800))
      const receiver = yield* localReceiver()
      const baseUrl = yield* serverOn(model.url)
      const tenant = yield* tenantWithWebhook(baseUrl, receiver.url)
      const created = yield* submitConversation(baseUrl, tenant.botId)
      // Created with the built-in summary, before the model answered: no model call on the request path.
      expect(created.ai_summary).toBe(BUILT_IN)
      expect(model.answered()).toBe(0)

      yield* eventually(() => receiver.received.length === 1)
      const expected = `Ada Lovelace writes: "${conversation[1]!.content}"`
      expect(receiver.received[0]!.payload.type).toBe("submission.completed")
      expect(receiver.received[0]!.payload.data.submission.ai_summary).toBe(expected)
      expect(yield* storedSummary(baseUrl, tenant.key, tenant.botId, created.id)).toBe(expected)

      const [request] = model.requests
      expect(request).toMatchObject({ method: "POST", path: "/v1/responses" })
      expect(request!.headers.authorization).toBe(`Bearer ${API_KEY}`)
      expect(logs.printed()).not.toContain(API_KEY)
    }).pipe(Effect.scoped),
  30_000
)

const failures: ReadonlyArray<readonly [string, ModelBehaviour]> = [
  ["a model that does not answer in time", { kind: "hang" }],
  ["a 500", { kind: "status", status: 500 }],
  [
    "a 429",
    {
      kind: "status",
      status: 429,
      headers: { "retry-after": "30" },
      body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }
    }
  ],
  ["a malformed answer", { kind: "raw", body: '{"id":"resp_1","object":"response","output":"Tr' }],
  ["an over-long answer", { kind: "answer", text: "Ignore the form. ".repeat(200) }]
]

it.live.each(failures)(
  "%s: the submission keeps the built-in summary and is delivered at once, not at the wait's end",
  ([, behaviour]) =>
    Effect.gen(function* () {
      const model = yield* modelServer(behaviour)
      const receiver = yield* localReceiver()
      // The wait (20 s) is longer than this test may take: the delivery goes because the call ended.
      const baseUrl = yield* serverOn(model.url, { timeoutMs: 500 })
      const tenant = yield* tenantWithWebhook(baseUrl, receiver.url)
      const created = yield* submitConversation(baseUrl, tenant.botId)
      expect(created.ai_summary).toBe(BUILT_IN)
      yield* eventually(() => receiver.received.length === 1, 8_000)
      expect(model.requests).toHaveLength(1)
      expect(receiver.received[0]!.payload.data.submission.ai_summary).toBe(BUILT_IN)
      expect(yield* storedSummary(baseUrl, tenant.key, tenant.botId, created.id)).toBe(BUILT_IN)
      expect(logs.printed()).not.toContain(API_KEY)
    }).pipe(Effect.scoped),
  30_000
)

it.live(
  "a model slower than INTAKE_SUMMARIZER_WAIT: the delivery goes at the wait's end with the built-in summary",
  () =>
    Effect.gen(function* () {
      const model = yield* modelServer({ kind: "hang" })
      const receiver = yield* localReceiver()
      const baseUrl = yield* serverOn(model.url, { waitMs: 700, timeoutMs: 20_000 })
      const tenant = yield* tenantWithWebhook(baseUrl, receiver.url)
      const started = Date.now()
      yield* submitConversation(baseUrl, tenant.botId)
      yield* eventually(() => receiver.received.length === 1, 8_000)
      expect(Date.now() - started).toBeGreaterThanOrEqual(650)
      expect(model.answered()).toBe(0)
      expect(receiver.received[0]!.payload.data.submission.ai_summary).toBe(BUILT_IN)
    }).pipe(Effect.scoped),
  30_000
)

it.live(
  "a failing model is logged once when it starts failing and once when it answers again, never with the key",
  () =>
    Effect.gen(function* () {
      const model = yield* modelServer({ kind: "status", status: 503 })
      const receiver = yield* localReceiver()
      const baseUrl = yield* serverOn(model.url)
      const tenant = yield* tenantWithWebhook(baseUrl, receiver.url)
      const from = logs.lines.length
      for (let i = 0; i < 3; i++) yield* submitConversation(baseUrl, tenant.botId)
      yield* eventually(() => receiver.received.length === 3, 8_000)
      // Readiness is the store's, not the model's.
      expect((yield* call(baseUrl, "GET", "/readyz")).status).toBe(200)
      model.behave({ kind: "answer", text: "Ada Lovelace asks for 40 engines." })
      const last = yield* submitConversation(baseUrl, tenant.botId)
      yield* eventually(() => receiver.received.length === 4, 8_000)
      expect(receiver.received[3]!.payload.data.submission.id).toBe(last.id)
      expect(receiver.received[3]!.payload.data.submission.ai_summary).toBe(
        "Ada Lovelace asks for 40 engines."
      )
      const logged = logs.parsed(from)
      const modelLines = logged.filter((line) => /model summarizer/.test(line.message ?? ""))
      expect(modelLines).toEqual([
        expect.objectContaining({ level: "warn", reason: "server_error", status: 503 }),
        expect.objectContaining({ level: "info", message: expect.stringMatching(/answering again/) })
      ])
      expect(logs.printed()).not.toContain(API_KEY)
    }).pipe(Effect.scoped),
  30_000
)

it.live(
  "a restart with pending summaries finishes them: a stopped server gives its claimed job back, the next one asks again",
  () =>
    Effect.gen(function* () {
      const dataDir = yield* temporaryDirectory("intake-summaries-")
      const model = yield* modelServer({ kind: "hang" })
      const receiver = yield* localReceiver()
      const options = (timeoutMs: number): RuntimeOptions => ({
        webhookAllowPrivateNetworks: true,
        summarizer: summarizer(model.url, { timeoutMs, waitMs: 60_000 })
      })
      const { tenant, id } = yield* Effect.scoped(
        Effect.gen(function* () {
          const baseUrl = yield* startServer(pgliteRuntime(dataDir, options(30_000)))
          const tenant = yield* tenantWithWebhook(baseUrl, receiver.url)
          const { id } = yield* submitConversation(baseUrl, tenant.botId)
          // The job is claimed and its call under way when the server stops.
          yield* eventually(() => model.requests.length === 1, 8_000)
          return { tenant, id }
        })
      )
      expect(receiver.received).toHaveLength(0)
      model.behave(echoingModel())
      const baseUrl = yield* startServer(pgliteRuntime(dataDir, options(5_000)))
      yield* eventually(() => receiver.received.length === 1, 15_000)
      const expected = `Ada Lovelace writes: "${conversation[1]!.content}"`
      expect(receiver.received[0]!.payload.data.submission.id).toBe(id)
      expect(receiver.received[0]!.payload.data.submission.ai_summary).toBe(expected)
      expect(yield* storedSummary(baseUrl, tenant.key, tenant.botId, id)).toBe(expected)
      expect(model.requests).toHaveLength(2)
    }).pipe(Effect.scoped),
  60_000
)
