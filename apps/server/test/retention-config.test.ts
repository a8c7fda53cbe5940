/** WEBHOOK_RETENTION: 30 days unless set, the duration syntax of WEBHOOK_DISABLE_AFTER, read by server and worker. */
import { describe, expect, it } from "@effect/vitest"
import { deliveryConfig } from "@intake/delivery"
import { type Config, ConfigProvider, Duration, Effect, Either } from "effect"
import { describeConfigError, serverConfig } from "../src/config.js"

const read = <A>(config: Config.Config<A>, env: Record<string, string>) =>
  Effect.either(config).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.runSync
  )

const DAY = 86_400_000

describe("WEBHOOK_RETENTION", () => {
  it("is 30 days unless set, and takes a duration like 7d or 12h", () => {
    expect(Either.map(read(serverConfig, {}), (c) => Duration.toMillis(c.webhookRetention))).toEqual(
      Either.right(30 * DAY)
    )
    expect(
      Either.map(read(serverConfig, { WEBHOOK_RETENTION: "7d" }), (c) =>
        Duration.toMillis(c.webhookRetention)
      )
    ).toEqual(Either.right(7 * DAY))
    expect(Either.map(read(deliveryConfig, {}), (c) => c.retentionMs)).toEqual(Either.right(30 * DAY))
    expect(Either.map(read(deliveryConfig, { WEBHOOK_RETENTION: "12h" }), (c) => c.retentionMs)).toEqual(
      Either.right(12 * 3_600_000)
    )
  })

  it.each(["0d", "forever", "-1d"])(
    "%s stops the server at start with one line naming the variable",
    (value) => {
      const config = read(serverConfig, { WEBHOOK_RETENTION: value })
      expect(Either.isLeft(config)).toBe(true)
      if (Either.isLeft(config))
        expect(describeConfigError(config.left)).toMatch(/^Invalid configuration: WEBHOOK_RETENTION: /)
      expect(Either.isLeft(read(deliveryConfig, { WEBHOOK_RETENTION: value }))).toBe(true)
    }
  )
})
