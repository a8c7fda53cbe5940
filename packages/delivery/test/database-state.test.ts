/**
 * The database state under TestClock, on a fake ping the test turns off and on: one log line
 * when the database stops answering and one when it answers again, whether the watcher or a
 * /readyz-style check sees the change first, and nothing once the watcher has stopped.
 */
import { describe, expect, it } from "@effect/vitest"
import { StorageUnavailable } from "@intake/domain"
import { captureLogs } from "@intake/testing"
import { Effect, Fiber, TestClock } from "effect"
import { DatabaseState, describeFailure, makeDatabaseState, watchDatabase } from "../src/database-state.js"

const PASSWORD = "s3cret-pa55word"

/** A database the test stops and starts; each ping takes `delayMs` of TestClock time. */
const fakeDatabase = () => {
  const database = { up: true, delayMs: 0, pings: 0 }
  const ping = Effect.suspend(() => {
    database.pings++
    const { up, delayMs } = database
    return Effect.zipRight(
      Effect.sleep(delayMs),
      up
        ? Effect.void
        : Effect.fail(
            new StorageUnavailable({
              operation: "ping",
              cause: new Error(`connect ECONNREFUSED 10.0.0.7:5432 (postgres://intake:${PASSWORD}@db/intake)`)
            })
          )
    )
  })
  return { database, ping }
}

const down = {
  level: "warn",
  message: "database does not answer",
  database: "down",
  error: "ping: connect ECONNREFUSED 10.0.0.7:5432 (postgres://intake:***@db/intake)"
}
const up = { level: "info", message: "database answers again", database: "up" }

describe("DatabaseState", () => {
  it.scoped("the watcher logs the database going away once and its return once, without anyone asking", () =>
    Effect.gen(function* () {
      const logs = captureLogs()
      const { database, ping } = fakeDatabase()
      yield* Effect.gen(function* () {
        yield* TestClock.adjust("5 seconds")
        expect(database.pings).toBe(1)
        database.up = false
        // Three pings while it is away, one line.
        yield* TestClock.adjust("15 seconds")
        expect(database.pings).toBe(4)
        expect(logs.parsed()).toEqual([expect.objectContaining(down)])
        database.up = true
        yield* TestClock.adjust("10 seconds")
        expect(database.pings).toBe(6)
      }).pipe(Effect.provide(watchDatabase(ping)), Effect.provide(logs.layer))

      expect(logs.parsed()).toEqual([expect.objectContaining(down), expect.objectContaining(up)])
      expect(JSON.stringify(logs.parsed())).not.toContain(PASSWORD)
      // The layer closed: the watcher pings no more.
      yield* TestClock.adjust("1 minute")
      expect(database.pings).toBe(6)
    })
  )

  it.scoped("pings at the interval it is given", () =>
    Effect.gen(function* () {
      const { database, ping } = fakeDatabase()
      yield* Effect.gen(function* () {
        yield* TestClock.adjust("999 millis")
        expect(database.pings).toBe(0)
        yield* TestClock.adjust("1 millis")
        expect(database.pings).toBe(1)
        yield* TestClock.adjust("3 seconds")
        expect(database.pings).toBe(4)
      }).pipe(Effect.provide(watchDatabase(ping, { interval: "1 second" })))
    })
  )

  it.scoped("a check (as /readyz makes) and the watcher share one state: each change is logged once", () =>
    Effect.gen(function* () {
      const logs = captureLogs()
      const { database, ping } = fakeDatabase()
      yield* Effect.gen(function* () {
        const state = yield* DatabaseState
        database.up = false
        expect(yield* state.check).toBe(false)
        expect(logs.parsed()).toEqual([expect.objectContaining(down)])
        // The watcher sees the same outage: nothing more.
        yield* TestClock.adjust("5 seconds")
        expect(yield* state.check).toBe(false)
        database.up = true
        // This time the watcher sees the return first; the check after it is silent.
        yield* TestClock.adjust("5 seconds")
        expect(yield* state.check).toBe(true)
        expect(database.pings).toBe(5)
      }).pipe(Effect.provide(watchDatabase(ping)), Effect.provide(logs.layer))

      expect(logs.parsed()).toEqual([expect.objectContaining(down), expect.objectContaining(up)])
    })
  )

  it.scoped("a slow failure that lands after a newer success does not undo it", () =>
    Effect.gen(function* () {
      const logs = captureLogs()
      const { database, ping } = fakeDatabase()
      yield* Effect.gen(function* () {
        const state = yield* makeDatabaseState(ping)
        database.up = false
        expect(yield* state.check).toBe(false)
        // A ping into the outage that takes 2 s to give up…
        database.delayMs = 2_000
        const slow = yield* Effect.fork(state.check)
        yield* TestClock.adjust("1 second")
        // …while a newer one finds the database back.
        database.up = true
        database.delayMs = 0
        expect(yield* state.check).toBe(true)
        yield* TestClock.adjust("1 second")
        expect(yield* Fiber.join(slow)).toBe(false)
        expect(logs.parsed()).toEqual([expect.objectContaining(down), expect.objectContaining(up)])
        // And the state is still "up": the next failure is a change again.
        database.up = false
        expect(yield* state.check).toBe(false)
      }).pipe(Effect.provide(logs.layer))

      expect(logs.parsed().map((line) => line.database)).toEqual(["down", "up", "down"])
    })
  )

  it.scoped("stopping in the middle of a ping is not an outage", () =>
    Effect.gen(function* () {
      const logs = captureLogs()
      const { database, ping } = fakeDatabase()
      database.delayMs = 2_000
      yield* Effect.gen(function* () {
        yield* TestClock.adjust("6 seconds")
        expect(database.pings).toBe(1)
      }).pipe(Effect.provide(watchDatabase(ping)), Effect.provide(logs.layer))
      yield* TestClock.adjust("1 minute")
      expect(logs.parsed()).toEqual([])
      expect(database.pings).toBe(1)
    })
  )

  it("describes a failure by the messages along its causes, with any password masked", () => {
    expect(describeFailure(new StorageUnavailable({ operation: "ping", cause: "timeout" }))).toBe(
      "ping: timeout"
    )
    const error = new Error("connection failed", {
      cause: new Error(`password authentication failed for host=db user=intake password=${PASSWORD}`)
    })
    expect(describeFailure(error)).toBe(
      "connection failed: password authentication failed for host=db user=intake password=***"
    )
  })
})
