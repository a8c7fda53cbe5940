import { describe, expect, it } from "@effect/vitest"
import {
  Crypto,
  IntakeBots,
  IntakeBotsLive,
  makeIntakeBotId,
  ResourceNotFound,
  ShareSlug,
  Submissions,
  ValidationFailed
} from "@intake/domain/internal"
import { NodeCryptoLive } from "@intake/node"
import { everyFieldTypeSchema, newIntakeBot, requiredOnlyData } from "@intake/testing"
import { Effect, Layer, TestClock } from "effect"
import { givenBot, givenWorkspace, memoryPorts, submissionsArea } from "./setup.js"

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0)

describe("intake bots", () => {
  it.effect("a new bot is ACTIVE, at schema version 1, with an 8-character slug, created now", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id, { description: "Hello" })
      expect(bot).toMatchObject({
        workspaceId: workspace.id,
        name: "Client intake",
        description: "Hello",
        status: "ACTIVE",
        schemaVersion: 1,
        schema: everyFieldTypeSchema(),
        createdAt: T0,
        updatedAt: T0
      })
      expect(bot.id).toMatch(/^bot_/)
      expect(ShareSlug.isShareSlug(bot.shareSlug)).toBe(true)
      expect(yield* (yield* IntakeBots).get(workspace.id, bot.id)).toEqual(bot)
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("takes the status and description it is given, defaulting the description to empty", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bots = yield* IntakeBots
      const paused = yield* bots.create(workspace.id, { name: "P", status: "PAUSED", schema: [] })
      expect(paused).toMatchObject({ status: "PAUSED", description: "" })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("refuses a workspace that does not exist with 404 workspace", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(givenBot("ws_doesnotexist"))
      expect(error).toBeInstanceOf(ResourceNotFound)
      expect((error as ResourceNotFound).resource).toBe("workspace")
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("refuses an invalid definition, naming every problem", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bots = yield* IntakeBots
      const error = yield* Effect.flip(
        bots.create(workspace.id, {
          name: "",
          status: "RUNNING" as never,
          schema: [{ name: "Bad Name", label: "x", type: "text" }]
        })
      )
      expect(error).toBeInstanceOf(ValidationFailed)
      expect((error as ValidationFailed).issues.map((issue) => issue.path)).toEqual([
        "name",
        "status",
        "schema.0.name"
      ])
      const missing = yield* Effect.flip(bots.create(workspace.id, {} as never))
      expect((missing as ValidationFailed).issues.map((issue) => issue.path)).toEqual(["name", "schema"])
      expect((yield* bots.list(workspace.id, { limit: 10, cursor: null })).items).toEqual([])
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a slug already taken is drawn again", () => {
    // The first two draws give the same slug; the third another.
    const draws = [0, 0, 8].map((start) => Uint8Array.from({ length: 16 }, (_, i) => start + i))
    const stubbedCrypto = Layer.effect(
      Crypto,
      Effect.map(Crypto, (real) => ({
        ...real,
        randomBytes: (size: number) => draws.shift() ?? real.randomBytes(size)
      }))
    ).pipe(Layer.provide(NodeCryptoLive))
    const area = IntakeBotsLive.pipe(Layer.provideMerge(stubbedCrypto), Layer.provideMerge(memoryPorts()))
    return Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const first = yield* givenBot(workspace.id)
      const second = yield* givenBot(workspace.id)
      expect(first.shareSlug).toBe("ABCDEFGH")
      expect(second.shareSlug).toBe("IJKLMNOP")
    }).pipe(Effect.provide(area))
  })

  it.effect("another workspace's bot is not found", () =>
    Effect.gen(function* () {
      const mine = yield* givenWorkspace()
      const theirs = yield* givenWorkspace()
      const bot = yield* givenBot(theirs.id)
      const error = yield* Effect.flip((yield* IntakeBots).get(mine.id, bot.id))
      expect(error).toMatchObject({ _tag: "ResourceNotFound", resource: "intake_bot" })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("lists the workspace's bots newest first, page by page, with submission counts", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const other = yield* givenWorkspace()
      const created = []
      for (let i = 0; i < 5; i++) {
        created.push(yield* givenBot(workspace.id, { name: `Bot ${i}` }))
        yield* TestClock.adjust(1000)
      }
      yield* givenBot(other.id)
      const submissions = yield* Submissions
      yield* submissions.create(workspace.id, created[1]!.id, { data: requiredOnlyData() })
      yield* submissions.create(workspace.id, created[1]!.id, { data: requiredOnlyData(), isTest: true })

      const bots = yield* IntakeBots
      const first = yield* bots.list(workspace.id, { limit: 2, cursor: null })
      expect(first.items.map((bot) => bot.name)).toEqual(["Bot 4", "Bot 3"])
      const second = yield* bots.list(workspace.id, { limit: 2, cursor: first.nextCursor })
      expect(second.items.map((bot) => bot.name)).toEqual(["Bot 2", "Bot 1"])
      expect(second.items[1]!.submissionCount).toBe(2)
      const third = yield* bots.list(workspace.id, { limit: 2, cursor: second.nextCursor })
      expect(third.items.map((bot) => bot.name)).toEqual(["Bot 0"])
      expect(third.nextCursor).toBeNull()

      // A cursor belongs to its workspace's list; a forged or foreign one is a 400 on "cursor".
      const foreign = yield* Effect.flip(bots.list(other.id, { limit: 2, cursor: first.nextCursor }))
      expect(foreign).toMatchObject({ _tag: "ValidationFailed", status: 400, issues: [{ path: "cursor" }] })
      const garbage = yield* Effect.flip(bots.list(workspace.id, { limit: 2, cursor: "not-a-cursor" }))
      expect(garbage).toMatchObject({ _tag: "ValidationFailed", issues: [{ path: "cursor" }] })
    }).pipe(Effect.provide(submissionsArea()))
  )

  describe("updates", () => {
    it.effect("a schema change grows schema_version by one; the same schema keeps it", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T0)
        const workspace = yield* givenWorkspace()
        const bots = yield* IntakeBots
        const bot = yield* givenBot(workspace.id)
        yield* TestClock.adjust(5000)
        const renamed = yield* bots.update(bot.id, { name: "Renamed", schema: everyFieldTypeSchema() })
        expect(renamed).toMatchObject({
          name: "Renamed",
          schemaVersion: 1,
          updatedAt: T0 + 5000,
          createdAt: T0
        })
        const changed = yield* bots.update(bot.id, { schema: everyFieldTypeSchema().slice(0, 3) })
        expect(changed.schemaVersion).toBe(2)
        expect(changed.schema).toHaveLength(3)
        const again = yield* bots.update(bot.id, { schema: everyFieldTypeSchema() })
        expect(again.schemaVersion).toBe(3)
        expect(yield* bots.get(workspace.id, bot.id)).toEqual(again)
        expect(again.shareSlug).toBe(bot.shareSlug)
      }).pipe(Effect.provide(submissionsArea()))
    )

    it.effect("an invalid change changes nothing; an unknown bot is 404", () =>
      Effect.gen(function* () {
        const workspace = yield* givenWorkspace()
        const bots = yield* IntakeBots
        const bot = yield* givenBot(workspace.id)
        const error = yield* Effect.flip(
          bots.update(bot.id, { name: "New", schema: [{ name: "x", label: "X", type: "select" }] })
        )
        expect(error).toMatchObject({ _tag: "ValidationFailed", issues: [{ path: "schema.0.options" }] })
        expect(yield* bots.get(workspace.id, bot.id)).toEqual(bot)
        expect(yield* Effect.flip(bots.update(makeIntakeBotId("bot_unknown"), { name: "x" }))).toMatchObject({
          resource: "intake_bot"
        })
      }).pipe(Effect.provide(submissionsArea()))
    )

    it.effect("can pause a bot", () =>
      Effect.gen(function* () {
        const workspace = yield* givenWorkspace()
        const bot = yield* givenBot(workspace.id, newIntakeBot())
        expect((yield* (yield* IntakeBots).update(bot.id, { status: "PAUSED" })).status).toBe("PAUSED")
      }).pipe(Effect.provide(submissionsArea()))
    )
  })
})
