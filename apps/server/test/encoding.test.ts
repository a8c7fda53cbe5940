/** The envelope-only encoder gives exactly what the endpoint's schema would encode. */
import { describe, expect, it } from "@effect/vitest"
import * as Api from "@intake/api"
import { Effect, ParseResult, Schema } from "effect"
import { successEncoder } from "../src/encoding.js"

const bot = {
  id: "bot_01",
  name: "Contact form",
  status: "ACTIVE",
  description: "",
  share_url: "abcdEFGH",
  schema: [{ name: "email", label: "Email", type: "email", required: true }],
  created_at: "2026-11-21T10:00:00.000Z",
  updated_at: "2026-11-21T10:00:00.000Z"
}
const listed = {
  submissions: [
    {
      id: "sub_01",
      data: { email: "ada@example.com", topics: ["a", "b"], count: 3, ok: true, none: null },
      status: "COMPLETED",
      ai_summary: "Email: ada@example.com",
      is_test: false,
      file_count: 0,
      message_count: 2,
      schema_version: 1,
      created_at: "2026-11-21T10:00:00.000Z",
      updated_at: "2026-11-21T10:00:00.000Z"
    }
  ],
  schema: [{ name: "email", label: "Email", type: "email" }],
  pagination: { has_more: false, next_cursor: null }
}

const bothWays = <A>(schema: Schema.Schema<A, unknown, never>, value: A) =>
  Effect.gen(function* () {
    const fast = yield* successEncoder(schema)(value)
    const full = yield* ParseResult.encodeUnknown(schema)(value)
    expect(fast).toEqual(full)
    expect(fast).toEqual({ success: true, data: value })
  })

describe("successEncoder", () => {
  it.effect(
    "one bot and a page of submissions: the envelope around the value, as the schema encodes it",
    () =>
      Effect.gen(function* () {
        yield* bothWays(Api.getIntakeBot.successSchema as Schema.Schema<unknown, unknown, never>, {
          intake_bot: bot
        })
        yield* bothWays(Api.listSubmissions.successSchema as Schema.Schema<unknown, unknown, never>, listed)
      })
  )

  it.effect("a schema with a transformation inside is encoded by the schema", () =>
    Effect.gen(function* () {
      const schema = Api.success("Numbers", Schema.Struct({ n: Schema.NumberFromString }))
      const encode = successEncoder(schema as Schema.Schema<{ readonly n: number }, unknown, never>)
      expect(yield* encode({ n: 2 })).toEqual({ success: true, data: { n: "2" } })
    })
  )
})
