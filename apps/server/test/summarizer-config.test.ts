/** INTAKE_SUMMARIZER…: what the server accepts, and the one line a bad or missing value prints. */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { describeConfigError, serverConfig } from "../src/config.js"

const read = (env: Record<string, string>) =>
  Effect.either(serverConfig).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.runSync
  )

const KEY = "sk-proj-never-printed-0123456789"

describe("the summarizer's configuration", () => {
  it("is the built-in summarizer unless told otherwise", () => {
    const config = read({})
    expect(Either.isRight(config) && config.right.summarizer).toMatchObject({
      kind: "built-in",
      waitMs: 10_000,
      timeoutMs: 10_000,
      concurrency: 4
    })
  })

  it("takes OpenAI with a model and a key, or a local server with a model and no key", () => {
    const openai = read({
      INTAKE_SUMMARIZER: "openai",
      INTAKE_SUMMARIZER_MODEL: "gpt-4.1-mini",
      INTAKE_SUMMARIZER_API_KEY: KEY
    })
    expect(Either.isRight(openai)).toBe(true)
    if (Either.isRight(openai)) {
      expect(openai.right.summarizer.url).toBe("https://api.openai.com/v1")
      expect(Option.map(openai.right.summarizer.apiKey, Redacted.value)).toEqual(Option.some(KEY))
      expect(String(openai.right.summarizer.apiKey)).not.toContain(KEY)
    }
    const local = read({
      INTAKE_SUMMARIZER: "openai",
      INTAKE_SUMMARIZER_URL: "http://127.0.0.1:11434/v1",
      INTAKE_SUMMARIZER_MODEL: "llama3.2",
      INTAKE_SUMMARIZER_WAIT: "3s"
    })
    expect(Either.isRight(local) && local.right.summarizer).toMatchObject({
      kind: "openai",
      url: "http://127.0.0.1:11434/v1",
      model: Option.some("llama3.2"),
      apiKey: Option.none(),
      waitMs: 3_000
    })
  })

  it.each<readonly [string, Record<string, string>]>([
    ["INTAKE_SUMMARIZER", { INTAKE_SUMMARIZER: "gpt" }],
    ["INTAKE_SUMMARIZER_MODEL", { INTAKE_SUMMARIZER: "openai", INTAKE_SUMMARIZER_API_KEY: KEY }],
    ["INTAKE_SUMMARIZER_API_KEY", { INTAKE_SUMMARIZER: "openai", INTAKE_SUMMARIZER_MODEL: "gpt-4.1-mini" }],
    ["INTAKE_SUMMARIZER_URL", { INTAKE_SUMMARIZER_URL: "localhost:11434", INTAKE_SUMMARIZER_API_KEY: KEY }],
    ["INTAKE_SUMMARIZER_WAIT", { INTAKE_SUMMARIZER_WAIT: "soon" }],
    ["INTAKE_SUMMARIZER_TIMEOUT", { INTAKE_SUMMARIZER_TIMEOUT: "0s" }],
    ["INTAKE_SUMMARIZER_CONCURRENCY", { INTAKE_SUMMARIZER_CONCURRENCY: "0" }]
  ])("a bad or missing %s stops the start with one line naming it, never the key", (name, env) => {
    const config = read(env)
    expect(Either.isLeft(config)).toBe(true)
    if (Either.isLeft(config)) {
      const line = describeConfigError(config.left)
      expect(line.split("\n")).toHaveLength(1)
      expect(line).toMatch(new RegExp(`^Invalid configuration: ${name}: `))
      expect(line).not.toContain(KEY)
    }
  })
})
