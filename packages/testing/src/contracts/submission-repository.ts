import { expect, layer } from "@effect/vitest"
import {
  IntakeBotRepository,
  makeSubmissionId,
  PlanLimitExceeded,
  SubmissionRepository,
  UsageCounters,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { intakeBotRecord, messageRecords, submissionRecord } from "../fixtures-submissions.js"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"
import { inNewestFirstOrder, walkPages } from "./paging.js"

const T0 = 1_764_000_000_000

export const submissionRepositoryContract = (
  name: string,
  theLayer: Layer.Layer<SubmissionRepository | IntakeBotRepository | WorkspaceRepository | UsageCounters>
): void =>
  layer(checkedStores(theLayer))(`SubmissionRepository contract (${name})`, (it) => {
    const givenBot = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      const bot = intakeBotRecord(workspace.id)
      yield* (yield* IntakeBotRepository).insert(bot)
      return bot
    })

    it.effect("stores a submission with its messages, in order, found only under its bot and workspace", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const otherBot = yield* givenBot
        const submission = submissionRecord(bot, { isTest: true, data: { name: "Ada", email: null } })
        const messages = messageRecords(submission, ["What is your name?", "Ada", "And your email?"])
        yield* submissions.insert(submission, messages)

        expect(yield* submissions.findById(submission.id)).toEqual(Option.some(submission))
        expect(yield* submissions.findInBot(bot.workspaceId, bot.id, submission.id)).toEqual(
          Option.some({ ...submission, messages })
        )
        expect(Option.isNone(yield* submissions.findInBot(bot.workspaceId, otherBot.id, submission.id))).toBe(
          true
        )
        expect(Option.isNone(yield* submissions.findInBot(otherBot.workspaceId, bot.id, submission.id))).toBe(
          true
        )
        expect(
          Option.isNone(
            yield* submissions.findInBot(bot.workspaceId, bot.id, makeSubmissionId(uniqueId("sub")))
          )
        ).toBe(true)
      })
    )

    it.effect("insertWithinQuota counts and stores up to the quota, then refuses and writes nothing", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const usage = yield* UsageCounters
        const bot = yield* givenBot
        const quota = { period: "2026-11", max: 2 }
        const first = submissionRecord(bot)
        const messages = messageRecords(first, ["Hello", "Hi, what is your email?"])
        yield* submissions.insertWithinQuota(first, messages, quota)
        yield* submissions.insertWithinQuota(submissionRecord(bot), [], quota)
        expect(yield* submissions.findInBot(bot.workspaceId, bot.id, first.id)).toEqual(
          Option.some({ ...first, messages })
        )
        const refused = submissionRecord(bot)
        const failure = yield* Effect.flip(
          submissions.insertWithinQuota(refused, messageRecords(refused, ["Hello"]), quota)
        )
        expect(failure).toBeInstanceOf(PlanLimitExceeded)
        expect((failure as PlanLimitExceeded).details).toEqual({
          resource: "submissions",
          current: 2,
          max: 2
        })
        expect(Option.isNone(yield* submissions.findById(refused.id))).toBe(true)
        expect(yield* usage.submissionsUsed(bot.workspaceId, "2026-11")).toBe(2)
        // Another period counts from zero; a quota of 0 admits nothing.
        yield* submissions.insertWithinQuota(submissionRecord(bot), [], { period: "2026-12", max: 2 })
        expect(yield* usage.submissionsUsed(bot.workspaceId, "2026-12")).toBe(1)
        const none = yield* Effect.flip(
          submissions.insertWithinQuota(submissionRecord(bot), [], { period: "2027-01", max: 0 })
        )
        expect((none as PlanLimitExceeded).details).toEqual({ resource: "submissions", current: 0, max: 0 })
      })
    )

    it.effect("30 concurrent insertWithinQuota with 10 left store exactly 10", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const usage = yield* UsageCounters
        const bot = yield* givenBot
        const quota = { period: "2026-11", max: 10 }
        const outcomes = yield* Effect.all(
          Array.from({ length: 30 }, () =>
            Effect.either(submissions.insertWithinQuota(submissionRecord(bot), [], quota))
          ),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(10)
        expect(yield* usage.submissionsUsed(bot.workspaceId, "2026-11")).toBe(10)
        const page = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 100, after: null },
          {
            createdAfter: null,
            createdBefore: null
          }
        )
        expect(page.items).toHaveLength(10)
      })
    )

    it.effect("replaces a submission's summary and updated_at, nothing else; false when it is gone", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const submission = submissionRecord(bot, { createdAt: T0, updatedAt: T0 })
        const messages = messageRecords(submission, ["Hello", "A quote, please"])
        yield* submissions.insert(submission, messages)
        expect(yield* submissions.replaceSummary(submission.id, "Ada asks for a quote.", T0 + 5)).toBe(true)
        expect(yield* submissions.findInBot(bot.workspaceId, bot.id, submission.id)).toEqual(
          Option.some({ ...submission, aiSummary: "Ada asks for a quote.", updatedAt: T0 + 5, messages })
        )
        expect(yield* submissions.replaceSummary(makeSubmissionId(uniqueId("sub")), "nobody", T0 + 5)).toBe(
          false
        )
      })
    )

    it.effect("lists with each submission's message count", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const talkative = submissionRecord(bot, { createdAt: T0 + 1 })
        const silent = submissionRecord(bot, { createdAt: T0 })
        const counted = submissionRecord(bot, { createdAt: T0 + 2 })
        const countedSilent = submissionRecord(bot, { createdAt: T0 + 3 })
        yield* submissions.insert(talkative, messageRecords(talkative, ["a", "b"]))
        yield* submissions.insert(silent, [])
        // Inserted within a quota too: the statements with a reservation keep the count alike.
        const quota = { period: "2026-11", max: 10 }
        yield* submissions.insertWithinQuota(counted, messageRecords(counted, ["a", "b", "c"]), quota)
        yield* submissions.insertWithinQuota(countedSilent, [], quota)
        const page = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 10, after: null },
          {
            createdAfter: null,
            createdBefore: null
          }
        )
        expect(page.hasMore).toBe(false)
        expect(page.items.map((item) => [item.id, item.messageCount])).toEqual([
          [countedSilent.id, 0],
          [counted.id, 3],
          [talkative.id, 2],
          [silent.id, 0]
        ])
      })
    )

    it.effect("lists each submission's data as its JSON text, keys in the order they were given", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const data = {
          zeta: 'quote " backslash \\ newline \n tab \t',
          alpha: ["x", "ü ✓ 😀"],
          middle: null,
          count: 12.5,
          flag: true
        }
        const submission = submissionRecord(bot, { data })
        yield* submissions.insert(submission, [])
        const page = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 10, after: null },
          { createdAfter: null, createdBefore: null }
        )
        const [item] = page.items
        expect(JSON.parse(item!.dataJson)).toEqual(data)
        expect(Object.keys(JSON.parse(item!.dataJson))).toEqual(["zeta", "alpha", "middle", "count", "flag"])
        const { data: _data, ...withoutData } = submission
        expect(item).toEqual({ ...withoutData, dataJson: item!.dataJson, messageCount: 0 })
      })
    )

    it.effect("120 submissions walked 50 at a time come back each exactly once, newest first", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const otherBot = yield* givenBot
        // Groups of seven share a created_at, so whole pages end inside a group.
        const inserted = Array.from({ length: 120 }, (_, i) =>
          submissionRecord(bot, { createdAt: T0 + Math.floor(i / 7) * 1000 })
        )
        for (const submission of inserted) yield* submissions.insert(submission, [])
        yield* submissions.insert(submissionRecord(otherBot), [])

        const { items, pages } = yield* walkPages(
          (page) =>
            submissions.list(bot.workspaceId, bot.id, page, { createdAfter: null, createdBefore: null }),
          50
        )
        expect(pages).toBe(3)
        expect(items).toHaveLength(120)
        expect(new Set(items.map((item) => item.id)).size).toBe(120)
        expect(items.every((item) => item.intakeBotId === bot.id)).toBe(true)
        expect(inNewestFirstOrder(items)).toBe(true)
      })
    )

    it.effect("created_after and created_before are inclusive and compose with the cursor", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const inserted = Array.from({ length: 10 }, (_, i) =>
          submissionRecord(bot, { createdAt: T0 + i * 1000 })
        )
        for (const submission of inserted) yield* submissions.insert(submission, [])
        const range = { createdAfter: T0 + 2000, createdBefore: T0 + 7000 }

        const { items } = yield* walkPages(
          (page) => submissions.list(bot.workspaceId, bot.id, page, range),
          4
        )
        expect(items.map((item) => item.createdAt)).toEqual([7, 6, 5, 4, 3, 2].map((s) => T0 + s * 1000))

        const before = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 50, after: null },
          {
            createdAfter: null,
            createdBefore: T0
          }
        )
        expect(before.items.map((item) => item.id)).toEqual([inserted[0]!.id])
        const after = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 50, after: null },
          {
            createdAfter: T0 + 9000,
            createdBefore: null
          }
        )
        expect(after.items.map((item) => item.id)).toEqual([inserted[9]!.id])
      })
    )

    it.effect("delete removes the submission and its messages, once", () =>
      Effect.gen(function* () {
        const submissions = yield* SubmissionRepository
        const bot = yield* givenBot
        const submission = submissionRecord(bot)
        yield* submissions.insert(submission, messageRecords(submission, ["hello"]))
        expect(yield* submissions.delete(submission.id)).toBe(true)
        expect(Option.isNone(yield* submissions.findById(submission.id))).toBe(true)
        expect(Option.isNone(yield* submissions.findInBot(bot.workspaceId, bot.id, submission.id))).toBe(true)
        expect(yield* submissions.delete(submission.id)).toBe(false)
        const page = yield* submissions.list(
          bot.workspaceId,
          bot.id,
          { limit: 10, after: null },
          {
            createdAfter: null,
            createdBefore: null
          }
        )
        expect(page.items).toEqual([])
      })
    )
  })
