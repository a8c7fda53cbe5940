import { expect, layer } from "@effect/vitest"
import {
  IntakeBotRepository,
  makeIntakeBotId,
  SubmissionRepository,
  WebhookRepository,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { intakeBotRecord, submissionRecord } from "../fixtures-submissions.js"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"
import { inNewestFirstOrder, walkPages } from "./paging.js"

export const intakeBotRepositoryContract = (
  name: string,
  theLayer: Layer.Layer<IntakeBotRepository | SubmissionRepository | WorkspaceRepository | WebhookRepository>
): void =>
  layer(checkedStores(theLayer))(`IntakeBotRepository contract (${name})`, (it) => {
    const givenWorkspace = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      return workspace
    })

    it.effect("finds an inserted bot by id, and in its own workspace only", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const workspace = yield* givenWorkspace
        const other = yield* givenWorkspace
        const bot = intakeBotRecord(workspace.id)
        yield* bots.insert(bot)
        expect(yield* bots.findById(bot.id)).toEqual(Option.some(bot))
        expect(yield* bots.findInWorkspace(workspace.id, bot.id)).toEqual(Option.some(bot))
        expect(Option.isNone(yield* bots.findInWorkspace(other.id, bot.id))).toBe(true)
        expect(Option.isNone(yield* bots.findById(makeIntakeBotId(uniqueId("bot"))))).toBe(true)
      })
    )

    it.effect(
      "the intake target is the bot with its workspace and the workspace's active endpoints, oldest first",
      () =>
        Effect.gen(function* () {
          const bots = yield* IntakeBotRepository
          const webhooks = yield* WebhookRepository
          const workspace = yield* givenWorkspace
          const other = yield* givenWorkspace
          const bot = intakeBotRecord(workspace.id)
          yield* bots.insert(bot)
          const newer = aWebhookEndpoint({
            workspaceId: workspace.id,
            events: ["submission.completed", "contact.created"],
            intakeBotIds: [bot.id],
            createdAt: 2_000,
            updatedAt: 3_000,
            lastDeliveryAt: 2_500,
            lastDeliveryOk: true
          })
          const older = aWebhookEndpoint({ workspaceId: workspace.id, createdAt: 1_000, updatedAt: 1_000 })
          const disabled = aWebhookEndpoint({
            workspaceId: workspace.id,
            status: "disabled",
            createdAt: 1_500
          })
          const paused = aWebhookEndpoint({ workspaceId: workspace.id, status: "paused", createdAt: 500 })
          const theirs = aWebhookEndpoint({ workspaceId: other.id })
          for (const endpoint of [newer, older, disabled, paused, theirs])
            yield* webhooks.insertWithinCap(endpoint, 10)

          const expected = Option.some({
            bot,
            workspace,
            activeEndpoints: [older, newer],
            inactiveEndpoints: [paused, disabled]
          })
          expect(yield* bots.findIntakeTarget(bot.id, workspace.id)).toEqual(expected)
          expect(yield* bots.findIntakeTarget(bot.id, null)).toEqual(expected)
          expect(Option.isNone(yield* bots.findIntakeTarget(bot.id, other.id))).toBe(true)
          expect(Option.isNone(yield* bots.findIntakeTarget(makeIntakeBotId(uniqueId("bot")), null))).toBe(
            true
          )
          const lone = intakeBotRecord(other.id)
          yield* bots.insert(lone)
          expect(yield* bots.findIntakeTarget(lone.id, other.id)).toEqual(
            Option.some({ bot: lone, workspace: other, activeEndpoints: [theirs], inactiveEndpoints: [] })
          )
        })
    )

    it.effect("an update replaces the stored bot", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const workspace = yield* givenWorkspace
        const bot = intakeBotRecord(workspace.id)
        yield* bots.insert(bot)
        const updated = {
          ...bot,
          name: "Renamed",
          status: "PAUSED" as const,
          schema: [{ name: "email", label: "Email", type: "email" as const, required: true }],
          schemaVersion: 2,
          updatedAt: bot.updatedAt + 1000
        }
        yield* bots.update(updated)
        expect(yield* bots.findById(bot.id)).toEqual(Option.some(updated))
      })
    )

    it.effect("knows which slugs are taken", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const workspace = yield* givenWorkspace
        const bot = intakeBotRecord(workspace.id)
        yield* bots.insert(bot)
        expect(yield* bots.slugExists(bot.shareSlug)).toBe(true)
        expect(yield* bots.slugExists(intakeBotRecord(workspace.id).shareSlug)).toBe(false)
      })
    )

    it.effect("existingIds answers only the workspace's bots among those asked", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const workspace = yield* givenWorkspace
        const other = yield* givenWorkspace
        const mine = intakeBotRecord(workspace.id)
        const theirs = intakeBotRecord(other.id)
        yield* bots.insert(mine)
        yield* bots.insert(theirs)
        const found = yield* bots.existingIds(workspace.id, [
          mine.id,
          theirs.id,
          makeIntakeBotId(uniqueId("bot"))
        ])
        expect([...found]).toEqual([mine.id])
        expect(yield* bots.existingIds(workspace.id, [])).toEqual([])
      })
    )

    it.effect("lists the workspace's bots newest first, each once, with their submission counts", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const submissions = yield* SubmissionRepository
        const workspace = yield* givenWorkspace
        const other = yield* givenWorkspace
        // Pairs share a created_at, so the id decides their order.
        const inserted = Array.from({ length: 7 }, (_, i) =>
          intakeBotRecord(workspace.id, { createdAt: 1_700_000_000_000 + Math.floor(i / 2) * 1000 })
        )
        for (const bot of inserted) yield* bots.insert(bot)
        yield* bots.insert(intakeBotRecord(other.id))
        for (let i = 0; i < 3; i++) yield* submissions.insert(submissionRecord(inserted[0]!), [])
        yield* submissions.insert(submissionRecord(inserted[4]!), [])

        const { items, pages } = yield* walkPages((page) => bots.list(workspace.id, page), 3)
        expect(pages).toBe(3)
        expect(items.map((bot) => bot.id).sort()).toEqual(inserted.map((bot) => bot.id).sort())
        expect(inNewestFirstOrder(items)).toBe(true)
        const counts = Object.fromEntries(items.map((bot) => [bot.id, bot.submissionCount]))
        expect(counts[inserted[0]!.id]).toBe(3)
        expect(counts[inserted[4]!.id]).toBe(1)
        expect(counts[inserted[1]!.id]).toBe(0)
      })
    )

    it.effect("a bot's submission count follows inserts and deletes", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const submissions = yield* SubmissionRepository
        const workspace = yield* givenWorkspace
        const bot = intakeBotRecord(workspace.id)
        yield* bots.insert(bot)
        const records = Array.from({ length: 4 }, () => submissionRecord(bot))
        for (const record of records) yield* submissions.insert(record, [])
        expect(yield* submissions.delete(records[1]!.id)).toBe(true)
        expect(yield* submissions.delete(records[1]!.id)).toBe(false)
        const listed = yield* bots.list(workspace.id, { limit: 10, after: null })
        expect(listed.items.map((item) => item.submissionCount)).toEqual([3])
      })
    )

    it.effect("an empty workspace lists nothing", () =>
      Effect.gen(function* () {
        const bots = yield* IntakeBotRepository
        const workspace = yield* givenWorkspace
        expect(yield* bots.list(workspace.id, { limit: 10, after: null })).toEqual({
          items: [],
          hasMore: false
        })
      })
    )
  })
