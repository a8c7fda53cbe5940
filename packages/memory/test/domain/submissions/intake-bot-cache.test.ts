/** Bots read by the API come from a cache: fresh for a minute, dropped at once on change. */
import { describe, expect, it } from "@effect/vitest"
import {
  BOT_CACHE_TTL_MS,
  IntakeBotCache,
  IntakeBotCacheLive,
  IntakeBotRepository,
  IntakeBots,
  IntakeBotsLive,
  makeIntakeBotId
} from "@intake/domain"
import { MemoryAccessInvalidation } from "@intake/memory/internal"
import { Effect, Layer, Option, TestClock } from "effect"
import { givenBot, givenWorkspace, memoryPorts } from "./setup.js"

/** The memory repository, counting the reads that reach it. */
const reads = { count: 0 }
const CountingRepository = Layer.effect(
  IntakeBotRepository,
  Effect.map(IntakeBotRepository, (inner) => ({
    ...inner,
    findById: (id: string) =>
      Effect.zipRight(
        Effect.sync(() => reads.count++),
        inner.findById(makeIntakeBotId(id))
      )
  }))
)

const area = () =>
  Layer.mergeAll(IntakeBotsLive, IntakeBotCacheLive).pipe(
    Layer.provideMerge(Layer.merge(CountingRepository, MemoryAccessInvalidation)),
    Layer.provideMerge(memoryPorts())
  )

describe("the bot cache", () => {
  it.effect(
    "a read within a minute costs no query; another workspace gets none; a minute later it reads again",
    () =>
      Effect.gen(function* () {
        const workspace = yield* givenWorkspace()
        const other = yield* givenWorkspace()
        const bot = yield* givenBot(workspace.id)
        const cache = yield* IntakeBotCache
        const before = reads.count
        expect(Option.getOrThrow(yield* cache.findInWorkspace(workspace.id, bot.id)).id).toBe(bot.id)
        expect(Option.isSome(yield* cache.findInWorkspace(workspace.id, bot.id))).toBe(true)
        expect(Option.isNone(yield* cache.findInWorkspace(other.id, bot.id))).toBe(true)
        expect(reads.count - before).toBe(1)
        yield* TestClock.adjust(BOT_CACHE_TTL_MS)
        yield* cache.findInWorkspace(workspace.id, bot.id)
        expect(reads.count - before).toBe(2)
      }).pipe(Effect.provide(area()))
  )

  it.effect("an update is seen by the next read at once", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const bots = yield* IntakeBots
      expect((yield* bots.get(workspace.id, bot.id)).status).toBe("ACTIVE")
      yield* bots.update(bot.id, { status: "PAUSED", name: "Renamed" })
      const read = yield* bots.get(workspace.id, bot.id)
      expect(read).toMatchObject({ status: "PAUSED", name: "Renamed" })
    }).pipe(Effect.provide(area()))
  )

  it.effect("a change published by another instance drops the cached bot", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const cache = yield* IntakeBotCache
      const repository = yield* IntakeBotRepository
      yield* cache.findInWorkspace(workspace.id, bot.id)
      // Another instance stored a change and published it: this one reads the bot anew.
      const stored = Option.getOrThrow(yield* repository.findById(bot.id))
      yield* repository.update({ ...stored, name: "Changed elsewhere" })
      expect(Option.getOrThrow(yield* cache.findInWorkspace(workspace.id, bot.id)).name).not.toBe(
        "Changed elsewhere"
      )
      yield* cache.changed(bot.id)
      expect(Option.getOrThrow(yield* cache.findInWorkspace(workspace.id, bot.id)).name).toBe(
        "Changed elsewhere"
      )
    }).pipe(Effect.provide(area()))
  )
})
