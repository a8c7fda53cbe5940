/**
 * Error answers are bounded whatever the request (docs/rules.md, Errors): every place an
 * error echoes request input (unknown keys, issue paths, values quoted in messages, header
 * values; /v1 and /admin) gets a generated request built to blow it up, and answers under
 * 64 KB, still naming what was wrong.
 */
import { gzipSync } from "node:zlib"
import { expect, layer } from "@effect/vitest"
import { MAX_ECHOED_NAME_LENGTH, MAX_ISSUE_MESSAGE_LENGTH } from "@intake/domain"
import { Effect } from "effect"
import { ADMIN_TOKEN, type Answer, BaseUrl } from "./harness.js"
import { expectError, provision, realServer, sendBytes } from "./support.js"

const MAX_ERROR_BODY = 64 * 1024

interface Issue {
  readonly path: string
  readonly message: string
}

interface Details {
  readonly issues: ReadonlyArray<Issue>
  readonly issue_count?: number
  readonly unknown_keys?: ReadonlyArray<string>
  readonly unknown_key_count?: number
}

/** The 400 of a bounded answer: under 64 KB, every echoed name and message cut. */
const boundedFailure = (answer: Answer & { readonly size: number }): Details => {
  const details = expectError(answer, 400, "validation_failed") as unknown as Details
  expect(answer.size).toBeLessThan(MAX_ERROR_BODY)
  for (const issue of details.issues) {
    expect(issue.path.length).toBeLessThanOrEqual(MAX_ECHOED_NAME_LENGTH)
    expect(issue.message.length).toBeLessThanOrEqual(MAX_ISSUE_MESSAGE_LENGTH)
  }
  for (const key of details.unknown_keys ?? []) expect(key.length).toBeLessThanOrEqual(MAX_ECHOED_NAME_LENGTH)
  return details
}

/** Whether `text` is a cut echo of a name starting with `start`. */
const isCut = (text: string, start: string) => text.startsWith(start) && text.endsWith("…")

/** A cut name: what it started with (a pattern), then the ellipsis. */
const cutFrom = (start: string) => expect.stringMatching(new RegExp(`^${start}.*…$`, "s"))

const send = (
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  method = "POST"
) =>
  sendBytes(
    baseUrl,
    path,
    body === undefined ? undefined : Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
    headers,
    method
  )

/** Keys of `length` control characters (six bytes each in JSON), distinct by a numbered prefix. */
const controlKeys = (count: number, length: number) =>
  Array.from({ length: count }, (_, i) => `k${i}${"\u0001".repeat(length)}`)

layer(realServer(), { excludeTestServices: true })("bounded error answers", (it) => {
  it.effect(
    "a 1 MB unknown key (a 1 KB gzip body) answers a few hundred bytes naming its start, top level and under data",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const auth = { authorization: `Bearer ${tenant.key}` }
        const key = "k".repeat(1_000_000)
        const gzip = (body: string) => gzipSync(Buffer.from(body))
        const submissions = `/v1/intake-bots/${tenant.botId}/submissions`

        const topLevel = gzip(`{"data":{},"${key}":1}`)
        expect(topLevel.length).toBeLessThan(2_000)
        const atTop = boundedFailure(
          yield* sendBytes(baseUrl, submissions, topLevel, { ...auth, "content-encoding": "gzip" })
        )
        expect(atTop.unknown_keys).toEqual([cutFrom("kkk")])
        expect(atTop.issues).toEqual([
          { path: cutFrom("kkk"), message: expect.stringMatching(/^is not a field/) }
        ])

        const underData = boundedFailure(
          yield* sendBytes(baseUrl, submissions, gzip(`{"data":{"name":"Ada","${key}":1}}`), {
            ...auth,
            "content-encoding": "gzip"
          })
        )
        expect(underData.unknown_keys).toEqual([cutFrom("kkk")])
        expect(underData.issues).toContainEqual({ path: cutFrom("data\\.kkk"), message: expect.any(String) })

        const webhook = boundedFailure(
          yield* sendBytes(
            baseUrl,
            "/v1/webhooks",
            gzip(`{"url":"https://127.0.0.1/h","events":[],"${key}":1}`),
            {
              ...auth,
              "content-encoding": "gzip"
            }
          )
        )
        expect(webhook.unknown_keys).toEqual([cutFrom("kkk")])
      })
  )

  it.effect(
    "150 unknown keys of 1,000 control characters each: the first ones listed, all of them counted",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const auth = { authorization: `Bearer ${tenant.key}` }
        const keys = controlKeys(150, 1_000)
        for (const [path, body, prefix] of [
          [
            `/v1/intake-bots/${tenant.botId}/submissions`,
            { data: {}, ...Object.fromEntries(keys.map((k) => [k, 1])) },
            ""
          ],
          [
            `/v1/intake-bots/${tenant.botId}/submissions`,
            { data: { name: "Ada", ...Object.fromEntries(keys.map((k) => [k, 1])) } },
            "data."
          ],
          [
            "/v1/webhooks",
            { url: "https://127.0.0.1/h", events: [], ...Object.fromEntries(keys.map((k) => [k, 1])) },
            ""
          ]
        ] as const) {
          const sent = JSON.stringify(body)
          expect(sent.length).toBeLessThan(1_048_576)
          const details = boundedFailure(yield* send(baseUrl, path, sent, auth))
          const listed = details.issues.filter((issue) => issue.path.startsWith(`${prefix}k`))
          expect(listed.length).toBeGreaterThan(0)
          expect(isCut(listed[0]!.path, `${prefix}k0\u0001`)).toBe(true)
          expect(details.issue_count ?? details.issues.length).toBeGreaterThanOrEqual(150)
          expect(details.unknown_keys!.length).toBeGreaterThan(0)
          expect(details.unknown_key_count).toBe(150)
        }
      })
  )

  it.effect("a value quoted in a message, and a header value, are cut", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const auth = { authorization: `Bearer ${tenant.key}` }
      // A string expected, an object holding 900,000 characters sent: the message quotes it.
      const quoted = boundedFailure(
        yield* send(
          baseUrl,
          "/v1/webhooks",
          { url: { v: "x".repeat(900_000) }, events: ["contact.created"] },
          auth
        )
      )
      expect(quoted.issues).toEqual([
        { path: "url", message: expect.stringMatching(/^Expected string.*xxx.*…$/s) }
      ])

      const encoding = boundedFailure(
        yield* send(baseUrl, "/v1/webhooks", "{}", { ...auth, "content-encoding": "e".repeat(8_000) })
      )
      expect(encoding.issues[0]!.message).toMatch(/^Content-Encoding eee.*…$/s)
    })
  )

  it.effect("query values of 1,000 control characters answer a bounded 400 naming each parameter", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      // Within the header limit: each character travels as %01.
      const long = "\u0001".repeat(1_000)
      const query = new URLSearchParams({ limit: long, created_after: long, created_before: long })
      const details = boundedFailure(
        yield* send(
          baseUrl,
          `/v1/intake-bots/${tenant.botId}/submissions?${query}`,
          undefined,
          { authorization: `Bearer ${tenant.key}` },
          "GET"
        )
      )
      expect(details.issues.map((issue) => issue.path).sort()).toEqual([
        "created_after",
        "created_before",
        "limit"
      ])
    })
  )

  it.effect("the operator API: huge unknown keys and quoted values are cut too", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
      const keys = controlKeys(60, 2_000)

      const workspace = boundedFailure(
        yield* send(
          baseUrl,
          `/admin/workspaces/${tenant.workspaceId}`,
          Object.fromEntries(keys.map((key) => [key, 1])),
          auth,
          "PATCH"
        )
      )
      expect(workspace.unknown_key_count).toBe(60)

      // A string expected, an object of 900,000 characters sent: the message quotes it, cut.
      const bot = boundedFailure(
        yield* send(
          baseUrl,
          `/admin/workspaces/${tenant.workspaceId}/intake-bots`,
          { name: { v: "x".repeat(900_000) }, schema: [] },
          auth
        )
      )
      expect(bot.issues).toEqual([
        { path: "name", message: expect.stringMatching(/^Expected string.*xxx.*…$/s) }
      ])
    })
  )
})
