/**
 * LOG_LEVEL as an operator types it, and what the JSON logger then writes: one line per
 * log at or above the level, fields at the top level, nothing below the level.
 */
import { describe, expect, it } from "@effect/vitest"
import { captureLogs } from "@intake/testing"
import {
  Cause,
  ConfigProvider,
  Console,
  Deferred,
  Effect,
  Either,
  Fiber,
  FiberRefs,
  HashMap,
  List,
  LogLevel
} from "effect"
import { vi } from "vitest"
import {
  jsonLineLogger,
  LOG_FLUSH_CHARS,
  LOG_FLUSH_DELAY_MS,
  loggingLayer,
  logLevelConfig,
  RequestLogWriter
} from "../src/logging.js"

/** What the loggers write to stdout, one entry per write, for the rest of the test's scope. */
const capturedWrites = Effect.acquireRelease(
  Effect.sync(() => {
    const writes: Array<string> = []
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
      writes.push(String(chunk))
      return true
    })
    return { writes, spy }
  }),
  ({ spy }) => Effect.sync(() => spy.mockRestore())
).pipe(Effect.map(({ writes }) => writes))

/** Waits on the real clock: the sink's timer is node's, not the test clock's. */
const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

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

  it.scoped("at warning, info lines are dropped and a warning is one JSON line with its fields on top", () =>
    Effect.gen(function* () {
      const writes = yield* capturedWrites
      yield* Effect.gen(function* () {
        yield* Effect.logInfo({ message: "request", route: "/v1/intake-bots" })
        yield* Effect.logWarning({ message: "database does not answer", database: "down" })
      }).pipe(Effect.provide(loggingLayer(LogLevel.Warning)))
      const written = writes.flatMap((chunk) => chunk.split("\n").filter((line) => line !== ""))
      expect(written).toHaveLength(1)
      const line = JSON.parse(written[0]!)
      expect(line).toMatchObject({ level: "warn", message: "database does not answer", database: "down" })
      expect(line.time).toBe(new Date(line.time).toISOString())
    })
  )

  it.scoped(
    "lines logged in several turns within the flush delay leave in one write, in order, once the delay has passed",
    () =>
      Effect.gen(function* () {
        const writes = yield* capturedWrites
        yield* Effect.gen(function* () {
          // Three lines, each in a turn of the event loop of its own.
          const started = performance.now()
          for (const n of [1, 2, 3]) {
            yield* Effect.logInfo({ message: "request", n })
            yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
          }
          // A machine too busy to turn the loop three times within the delay proves nothing here.
          const withinDelay = performance.now() - started < LOG_FLUSH_DELAY_MS
          if (withinDelay) expect(writes).toHaveLength(0)
          yield* realSleep(LOG_FLUSH_DELAY_MS * 3)
          if (withinDelay) expect(writes).toHaveLength(1)
          const written = writes.length
          yield* Effect.logInfo({ message: "request", n: 4 })
          yield* realSleep(LOG_FLUSH_DELAY_MS * 3)
          expect(writes).toHaveLength(written + 1)
        }).pipe(Effect.provide(loggingLayer(LogLevel.Info)))
        expect(writes.every((chunk) => chunk.endsWith("\n"))).toBe(true)
        expect(
          writes
            .join("")
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line).n)
        ).toEqual([1, 2, 3, 4])
        expect(JSON.parse(writes.at(-1)!).n).toBe(4)
      })
  )

  it.scoped("lines past the size bound leave at once, and what is pending leaves when the layer closes", () =>
    Effect.gen(function* () {
      const writes = yield* capturedWrites
      const filler = "x".repeat(LOG_FLUSH_CHARS / 4)
      yield* Effect.gen(function* () {
        for (const n of [1, 2, 3, 4]) yield* Effect.logInfo({ message: "big", n, filler })
        // Four lines of a quarter of the bound each (and their fields): the fourth crosses it.
        expect(writes).toHaveLength(1)
        yield* Effect.logInfo({ message: "small", n: 5 })
        expect(writes).toHaveLength(1)
      }).pipe(Effect.provide(loggingLayer(LogLevel.Info)))
      expect(writes).toHaveLength(2)
      const lines = writes.flatMap((chunk) => chunk.trimEnd().split("\n")).map((line) => JSON.parse(line).n)
      expect(lines).toEqual([1, 2, 3, 4, 5])
    })
  )

  it.scoped("what the process prints on the console comes after the lines logged before it", () =>
    Effect.gen(function* () {
      const writes = yield* capturedWrites
      // The console the process had, recording into the same list as stdout's writes.
      const recording: Console.Console = {
        ...(yield* Effect.console),
        log: (...args) => Effect.sync(() => writes.push(`${args.join(" ")}\n`))
      }
      yield* Effect.gen(function* () {
        yield* Effect.logInfo({ message: "listening", n: 1 })
        yield* Console.log("a banner")
        yield* Effect.logInfo({ message: "request", n: 2 })
      }).pipe(Effect.provide(loggingLayer(LogLevel.Info)), Effect.withConsole(recording))
      expect(writes.join("").trimEnd().split("\n")).toEqual([
        expect.stringContaining('"n":1'),
        "a banner",
        expect.stringContaining('"n":2')
      ])
    })
  )

  it.scoped("a line logged by a fiber that outlived the layer leaves at once", () =>
    Effect.gen(function* () {
      const writes = yield* capturedWrites
      const go = yield* Deferred.make<void>()
      const late = yield* Effect.forkDaemon(
        Effect.zipRight(Deferred.await(go), Effect.logInfo({ message: "late", n: 6 }))
      ).pipe(Effect.provide(loggingLayer(LogLevel.Info)))
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(late)
      expect(writes.map((chunk) => JSON.parse(chunk).n)).toEqual([6])
    })
  )

  describe("request lines (RequestLogWriter)", () => {
    const fields = {
      message: "request",
      requestId: "req_0123",
      method: "POST",
      route: "/v1/intake-bots/:id/submissions",
      status: 201,
      durationMs: 1.25,
      workspaceId: "ws_1",
      keyId: null
    }

    it.scoped(
      "under loggingLayer at info, leave with the other lines, as the logger writes the same fields",
      () =>
        Effect.gen(function* () {
          const writes = yield* capturedWrites
          yield* Effect.gen(function* () {
            yield* Effect.logInfo({ message: "listening", n: 1 })
            yield* (yield* RequestLogWriter)(fields)
          }).pipe(Effect.provide(loggingLayer(LogLevel.Info)))
          const [listening, request] = writes
            .join("")
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line))
          expect(listening).toMatchObject({ level: "info", n: 1 })
          expect(request).toEqual({ level: "info", time: request.time, ...fields })
          expect(request.time).toBe(new Date(request.time).toISOString())
          // The line jsonLineLogger writes for the same fields at the same time.
          const logged = jsonLineLogger.log({
            fiberId: undefined as never,
            logLevel: LogLevel.Info,
            message: fields,
            cause: Cause.empty,
            context: FiberRefs.empty(),
            spans: List.empty(),
            annotations: HashMap.empty(),
            date: new Date(request.time)
          })
          expect(JSON.parse(logged)).toEqual(request)
        })
    )

    it.scoped("under loggingLayer at warn, are dropped", () =>
      Effect.gen(function* () {
        const writes = yield* capturedWrites
        yield* Effect.flatMap(RequestLogWriter, (write) => write(fields)).pipe(
          Effect.provide(loggingLayer(LogLevel.Warning))
        )
        expect(writes).toEqual([])
      })
    )

    it.effect("without loggingLayer, go through Effect's loggers (a test's own logger sees them)", () =>
      Effect.gen(function* () {
        const logs = captureLogs()
        yield* Effect.flatMap(RequestLogWriter, (write) => write(fields)).pipe(Effect.provide(logs.layer))
        expect(logs.lines.map((line) => line.parts)).toEqual([[fields]])
      })
    )
  })
})
