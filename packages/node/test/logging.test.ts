/**
 * LOG_LEVEL as an operator types it, and what the JSON logger then writes: one line per
 * log at or above the level, fields at the top level, nothing below the level.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, LogLevel } from "effect"
import { vi } from "vitest"
import { loggingLayer, logLevelConfig } from "../src/logging.js"

const levelFrom = (env: Record<string, string>) =>
  Effect.either(
    Effect.withConfigProvider(logLevelConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))
  )

describe("LOG_LEVEL", () => {
  it.effect("is info when unset, and takes each documented name in any case", () =>
    Effect.gen(function* () {
      expect(yield* levelFrom({})).toEqual(Either.right(LogLevel.Info))
      const expected = {
        debug: LogLevel.Debug,
        INFO: LogLevel.Info,
        warning: LogLevel.Warning,
        warn: LogLevel.Warning,
        " Error ": LogLevel.Error,
        none: LogLevel.None
      }
      for (const [text, level] of Object.entries(expected)) {
        expect(yield* levelFrom({ LOG_LEVEL: text })).toEqual(Either.right(level))
      }
    })
  )

  it.effect("refuses an unknown level, naming the variable and the names it takes", () =>
    Effect.gen(function* () {
      const refused = yield* levelFrom({ LOG_LEVEL: "loud" })
      expect(Either.isLeft(refused)).toBe(true)
      const message = String(Either.isLeft(refused) ? refused.left : "")
      expect(message).toContain("LOG_LEVEL")
      expect(message).toContain("debug, info, warning, warn, error, none")
    })
  )

  it.effect("at warning, info lines are dropped and a warning is one JSON line with its fields on top", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
        written.push(
          ...String(chunk)
            .split("\n")
            .filter((line) => line !== "")
        )
        return true
      })
      yield* Effect.gen(function* () {
        yield* Effect.logInfo({ message: "request", route: "/v1/intake-bots" })
        yield* Effect.logWarning({ message: "database does not answer", database: "down" })
        // Lines are written once per turn of the event loop.
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }).pipe(
        Effect.provide(loggingLayer(LogLevel.Warning)),
        Effect.ensuring(Effect.sync(() => spy.mockRestore()))
      )
      expect(written).toHaveLength(1)
      const line = JSON.parse(written[0]!)
      expect(line).toMatchObject({ level: "warn", message: "database does not answer", database: "down" })
      expect(typeof line.time).toBe("string")
    })
  )

  it.effect("lines logged in one turn of the event loop leave in one write, in order", () =>
    Effect.gen(function* () {
      const writes: Array<string> = []
      const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
        writes.push(String(chunk))
        return true
      })
      yield* Effect.gen(function* () {
        for (const n of [1, 2, 3]) yield* Effect.logInfo({ message: "request", n })
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }).pipe(
        Effect.provide(loggingLayer(LogLevel.Info)),
        Effect.ensuring(Effect.sync(() => spy.mockRestore()))
      )
      expect(writes).toHaveLength(1)
      expect(writes[0]!.endsWith("\n")).toBe(true)
      expect(
        writes[0]!
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line).n)
      ).toEqual([1, 2, 3])
    })
  )
})
