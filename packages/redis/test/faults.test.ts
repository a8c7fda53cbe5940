/**
 * Which Redis errors are configuration faults (faults.ts), and how they are reported: one
 * error line a minute with its cause, a count, and shown for a minute after the last one.
 */
import { expect, it } from "@effect/vitest"
import { captureLogs } from "@intake/testing"
import { Effect, Option, TestClock } from "effect"
import { ReplyError } from "ioredis"
import { configurationFault, makeRedisFaults } from "../src/faults.js"

const reply = (message: string): Error => new ReplyError(message)

it("error replies are faults, except the transient ones; connection failures and time-outs are not", () => {
  expect(configurationFault(reply("MOVED 3999 127.0.0.1:7001"))).toBe("MOVED")
  expect(configurationFault(reply("WRONGTYPE Operation against a key holding the wrong kind of value"))).toBe(
    "WRONGTYPE"
  )
  expect(configurationFault(reply("NOAUTH Authentication required."))).toBe("NOAUTH")
  expect(configurationFault(reply("WRONGPASS invalid username-password pair"))).toBe("WRONGPASS")
  expect(configurationFault(reply("NOSCRIPT No matching script."))).toBe("NOSCRIPT")
  // A cluster client that learnt no slots says so in its own words, the node's reply beneath.
  const slotsFailed = Object.assign(new Error("Failed to refresh slots cache."), {
    lastNodeError: reply("NOAUTH Authentication required.")
  })
  expect(configurationFault(slotsFailed)).toBe("NOAUTH")
  for (const transient of [
    "LOADING Redis is loading",
    "CLUSTERDOWN The cluster is down",
    "TRYAGAIN",
    "BUSY x"
  ])
    expect(configurationFault(reply(transient))).toBeUndefined()
  expect(configurationFault(new Error("connect ECONNREFUSED 127.0.0.1:6379"))).toBeUndefined()
  expect(configurationFault(new Error("Redis did not answer within 3000 ms"))).toBeUndefined()
  expect(
    configurationFault(new Error("Stream isn't writeable and enableOfflineQueue options is false"))
  ).toBeUndefined()
})

it.effect(
  "a fault is logged as an error at most once a minute, counted, and shown for a minute after the last",
  () =>
    Effect.gen(function* () {
      const logs = captureLogs()
      const logged = logs.lines
      const faults = makeRedisFaults()
      const record = (error: unknown) => faults.record(error).pipe(Effect.provide(logs.layer))

      yield* record(new Error("connect ECONNREFUSED 127.0.0.1:6379"))
      expect(yield* faults.recent).toEqual(Option.none())
      expect(logged).toHaveLength(0)

      for (let i = 0; i < 3; i++) yield* record(reply("WRONGTYPE Operation against a key"))
      expect(logged).toHaveLength(1)
      expect(logged[0]?.level).toBe("ERROR")
      expect(String(logged[0]?.message)).toContain("WRONGTYPE")
      expect(Option.getOrThrow(yield* faults.recent)).toMatchObject({ code: "WRONGTYPE", count: 3 })

      yield* TestClock.adjust("59 seconds")
      yield* record(reply("WRONGTYPE Operation against a key"))
      expect(logged).toHaveLength(1)
      yield* TestClock.adjust("2 seconds")
      yield* record(reply("WRONGTYPE Operation against a key"))
      expect(logged).toHaveLength(2)
      // The second line says how many faults it stands for: three unlogged ones and itself.
      expect(String(logged[1]?.message)).toContain("4 times since the last report")
      expect(Option.getOrThrow(yield* faults.recent).count).toBe(5)

      yield* TestClock.adjust("60 seconds")
      expect(yield* faults.recent).toEqual(Option.none())
      // The count outlives the minute: a metrics counter reads it.
      expect(yield* faults.total).toBe(5)
    })
)
