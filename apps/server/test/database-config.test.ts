/** DATABASE_POOL_MODE and DATABASE_DIRECT_URL: Intake behind a transaction-mode pooler (docs/deploy-postgres.md). */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { describeConfigError, serverConfig } from "../src/config.js"

const read = (env: Record<string, string>) =>
  Effect.either(serverConfig).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.runSync
  )

const BOUNCER = "postgres://intake@127.0.0.1:6432/intake"
const DIRECT = "postgres://intake@127.0.0.1:5432/intake"

describe("DATABASE_POOL_MODE", () => {
  it("is session unless set; transaction takes DATABASE_DIRECT_URL along", () => {
    expect(Either.map(read({ DATABASE_URL: DIRECT }), (c) => c.databasePoolMode)).toEqual(
      Either.right("session")
    )
    const config = read({
      DATABASE_URL: BOUNCER,
      DATABASE_POOL_MODE: "transaction",
      DATABASE_DIRECT_URL: DIRECT
    })
    expect(Either.isRight(config)).toBe(true)
    if (Either.isRight(config)) {
      expect(config.right.databasePoolMode).toBe("transaction")
      expect(Option.map(config.right.databaseUrl, Redacted.value)).toEqual(Option.some(BOUNCER))
      expect(Option.map(config.right.databaseDirectUrl, Redacted.value)).toEqual(Option.some(DIRECT))
    }
  })

  it.each([
    [
      { DATABASE_URL: BOUNCER, DATABASE_POOL_MODE: "statement" },
      "DATABASE_POOL_MODE",
      /session or transaction/
    ],
    [{ DATABASE_URL: BOUNCER, DATABASE_POOL_MODE: "transaction" }, "DATABASE_DIRECT_URL", /required when/]
  ])("%o stops the server at start with one line naming the variable", (env, variable, reason) => {
    const config = read(env)
    expect(Either.isLeft(config)).toBe(true)
    if (Either.isLeft(config)) {
      expect(describeConfigError(config.left)).toMatch(new RegExp(`^Invalid configuration: ${variable}: `))
      expect(describeConfigError(config.left)).toMatch(reason)
      expect(describeConfigError(config.left)).not.toContain("intake@")
    }
  })
})
