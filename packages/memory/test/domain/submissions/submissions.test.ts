import { describe, expect, it } from "@effect/vitest"
import {
  EventOutbox,
  type FieldType,
  IntakeBots,
  makeIntakeBotId,
  makeSubmissionId,
  type SchemaField,
  Submissions,
  UsageCounters
} from "@intake/domain"
import { everyFieldTypeSchema, requiredOnlyData, validSubmissionData, valuesByType } from "@intake/testing"
import { Effect, Option, TestClock } from "effect"
import { givenBot, givenWorkspace, submissionsArea, writtenFor } from "./setup.js"

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0)

describe("creating submissions", () => {
  it.effect("stores a COMPLETED submission with its summary, bot schema version and messages", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const created = yield* submissions.create(workspace.id, bot.id, { data: validSubmissionData() })
      expect(created).toMatchObject({
        workspaceId: workspace.id,
        intakeBotId: bot.id,
        status: "COMPLETED",
        data: validSubmissionData(),
        isTest: false,
        fileCount: 0,
        schemaVersion: 1,
        createdAt: T0,
        updatedAt: T0,
        messages: []
      })
      expect(created.id).toMatch(/^sub_/)
      expect(
        created.aiSummary.startsWith("Name: Ada Lovelace; Email: ada@example.com; Phone: +44 20 7946 0958")
      ).toBe(true)
      expect(created.aiSummary.length).toBeLessThanOrEqual(280)
      const { completedEventId: _, ...stored } = created
      expect(yield* submissions.get(workspace.id, bot.id, created.id)).toEqual(stored)
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("keeps the request's id on the events a create raises, and names its submission.completed", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const created = yield* submissions.create(workspace.id, bot.id, {
        data: validSubmissionData(),
        requestId: "client-trace.9"
      })
      const event = yield* (yield* EventOutbox).findById(created.completedEventId!)
      expect(Option.getOrThrow(event)).toMatchObject({
        type: "submission.completed",
        submissionId: created.id,
        requestId: "client-trace.9"
      })
      // Without a request (the operator's collector passes none), the events name none.
      const quiet = yield* submissions.create(workspace.id, bot.id, { data: validSubmissionData() })
      const quietEvent = Option.getOrThrow(yield* (yield* EventOutbox).findById(quiet.completedEventId!))
      expect(quietEvent.requestId).toBeUndefined()
      // An IN_PROGRESS submission raises no event.
      expect(
        (yield* submissions.create(workspace.id, bot.id, { data: {}, status: "IN_PROGRESS" }))
          .completedEventId
      ).toBeNull()
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("accepts IN_PROGRESS and refuses any other status at path status", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      expect(
        (yield* submissions.create(workspace.id, bot.id, { data: {}, status: "IN_PROGRESS" })).status
      ).toBe("IN_PROGRESS")
      for (const status of ["ABANDONED", "completed", 1])
        expect(
          yield* Effect.flip(
            submissions.create(workspace.id, bot.id, { data: requiredOnlyData(), status: status as never })
          )
        ).toMatchObject({ _tag: "ValidationFailed", status: 400, issues: [{ path: "status" }] })
    }).pipe(Effect.provide(submissionsArea()))
  )

  describe("field values against the bot schema", () => {
    for (const [type, values] of Object.entries(valuesByType) as Array<
      [FieldType, (typeof valuesByType)[FieldType]]
    >)
      it.effect(`${type}: accepts a valid value and refuses an invalid one at data.<field>`, () =>
        Effect.gen(function* () {
          const field = everyFieldTypeSchema().find((candidate) => candidate.type === type)!
          const workspace = yield* givenWorkspace()
          const bot = yield* givenBot(workspace.id)
          const submissions = yield* Submissions
          const accepted = yield* submissions.create(workspace.id, bot.id, {
            data: requiredOnlyData({ [field.name]: values.valid[0] })
          })
          expect(accepted.data[field.name]).toEqual(values.valid[0])
          const refused = yield* Effect.flip(
            submissions.create(workspace.id, bot.id, {
              data: requiredOnlyData({ [field.name]: values.invalid[0] })
            })
          )
          expect(refused).toMatchObject({ _tag: "ValidationFailed", status: 400 })
          expect(refused._tag === "ValidationFailed" && refused.issues.map((issue) => issue.path)).toEqual([
            `data.${field.name}`
          ])
        }).pipe(Effect.provide(submissionsArea()))
      )
  })

  it.effect("refuses unknown field names with unknown_keys, and stores and counts nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const error = yield* Effect.flip(
        (yield* Submissions).create(workspace.id, bot.id, {
          data: requiredOnlyData({ favourite_colour: "blue" })
        })
      )
      expect(error).toMatchObject({
        _tag: "ValidationFailed",
        status: 400,
        unknownKeys: ["favourite_colour"],
        issues: [{ path: "data.favourite_colour" }]
      })
      expect(yield* (yield* UsageCounters).submissionsUsed(workspace.id, "2026-11")).toBe(0)
      expect((yield* writtenFor(workspace.id)).submissions).toEqual([])
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("enforces required fields only for COMPLETED submissions", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const error = yield* Effect.flip(
        submissions.create(workspace.id, bot.id, { data: { name: "", email: null } })
      )
      expect(error._tag === "ValidationFailed" && error.issues).toEqual([
        { path: "data.name", message: "is required" },
        { path: "data.email", message: "is required" }
      ])
      const partial = yield* submissions.create(workspace.id, bot.id, {
        data: { name: "", email: null },
        status: "IN_PROGRESS"
      })
      expect(partial.data).toEqual({ name: "", email: null })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a bot that is not ACTIVE takes no submissions (409), and nothing is counted", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const paused = yield* givenBot(workspace.id, { status: "PAUSED" })
      const archived = yield* givenBot(workspace.id, { status: "ARCHIVED" })
      const submissions = yield* Submissions
      for (const bot of [paused, archived])
        expect(
          yield* Effect.flip(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
        ).toMatchObject({
          _tag: "Conflict",
          httpStatus: 409
        })
      expect(yield* (yield* UsageCounters).submissionsUsed(workspace.id, "2026-11")).toBe(0)
      // Once active again it takes them.
      yield* (yield* IntakeBots).update(paused.id, { status: "ACTIVE" })
      yield* submissions.create(workspace.id, paused.id, { data: requiredOnlyData() })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a bot of another workspace is 404 intake_bot", () =>
    Effect.gen(function* () {
      const mine = yield* givenWorkspace()
      const theirs = yield* givenWorkspace()
      const bot = yield* givenBot(theirs.id)
      const error = yield* Effect.flip(
        (yield* Submissions).create(mine.id, bot.id, { data: requiredOnlyData() })
      )
      expect(error).toMatchObject({ _tag: "ResourceNotFound", resource: "intake_bot" })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a submission keeps the schema version it was validated against", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const before = yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      const shorter: Array<SchemaField> = everyFieldTypeSchema().slice(0, 2)
      yield* (yield* IntakeBots).update(bot.id, { schema: shorter })
      const after = yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      expect([before.schemaVersion, after.schemaVersion]).toEqual([1, 2])
      expect((yield* submissions.get(workspace.id, bot.id, before.id)).schemaVersion).toBe(1)
      // The new schema no longer knows the phone field.
      const error = yield* Effect.flip(
        submissions.create(workspace.id, bot.id, { data: requiredOnlyData({ phone: "+44 20 7946 0958" }) })
      )
      expect(error).toMatchObject({ unknownKeys: ["phone"] })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("the operator variant stores messages in order, and message_count counts them", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const created = yield* submissions.createForBot(bot.id, {
        data: requiredOnlyData(),
        isTest: true,
        messages: [
          { role: "assistant", content: "What is your name?" },
          { role: "user", content: "Ada Lovelace" },
          { role: "assistant", content: "Thanks!" }
        ]
      })
      expect(created.isTest).toBe(true)
      const detail = yield* submissions.get(workspace.id, bot.id, created.id)
      expect(detail.messages.map((message) => [message.role, message.content])).toEqual([
        ["assistant", "What is your name?"],
        ["user", "Ada Lovelace"],
        ["assistant", "Thanks!"]
      ])
      expect(
        detail.messages.every(
          (message) => message.submissionId === created.id && message.id.startsWith("msg_")
        )
      ).toBe(true)
      yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      const listed = yield* submissions.list(workspace.id, bot.id, {
        limit: 10,
        cursor: null,
        createdAfter: null,
        createdBefore: null
      })
      expect(listed.submissions.items.map((item) => item.messageCount).sort()).toEqual([0, 3])
      expect(
        yield* Effect.flip(submissions.createForBot(makeIntakeBotId("bot_unknown"), { data: {} }))
      ).toMatchObject({
        resource: "intake_bot"
      })
      const badMessage = yield* Effect.flip(
        submissions.createForBot(bot.id, {
          data: requiredOnlyData(),
          messages: [{ role: "robot" as never, content: "x" }]
        })
      )
      expect(badMessage).toMatchObject({ _tag: "ValidationFailed", issues: [{ path: "messages.0.role" }] })
    }).pipe(Effect.provide(submissionsArea()))
  )
})

describe("reading and removing submissions", () => {
  it.effect(
    "lists newest first with the bot's current schema, paged by cursor, filtered by inclusive dates",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T0)
        const workspace = yield* givenWorkspace()
        const bot = yield* givenBot(workspace.id)
        const submissions = yield* Submissions
        const created = []
        for (let i = 0; i < 6; i++) {
          created.push(
            yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData({ team_size: i }) })
          )
          yield* TestClock.adjust(1000)
        }
        const query = { limit: 2, createdAfter: T0 + 1000, createdBefore: T0 + 4000 }
        const first = yield* submissions.list(workspace.id, bot.id, { ...query, cursor: null })
        expect(first.schema).toEqual(bot.schema)
        expect(first.submissions.items.map((item) => item.id)).toEqual([created[4]!.id, created[3]!.id])
        const second = yield* submissions.list(workspace.id, bot.id, {
          ...query,
          cursor: first.submissions.nextCursor
        })
        expect(second.submissions.items.map((item) => item.id)).toEqual([created[2]!.id, created[1]!.id])
        expect(second.submissions.nextCursor).toBeNull()

        const otherBot = yield* givenBot(workspace.id)
        const foreignCursor = yield* Effect.flip(
          submissions.list(workspace.id, otherBot.id, { ...query, cursor: first.submissions.nextCursor })
        )
        expect(foreignCursor).toMatchObject({ _tag: "ValidationFailed", issues: [{ path: "cursor" }] })
      }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("404 names the outermost missing resource", () =>
    Effect.gen(function* () {
      const mine = yield* givenWorkspace()
      const theirs = yield* givenWorkspace()
      const theirBot = yield* givenBot(theirs.id)
      const myBot = yield* givenBot(mine.id)
      const submissions = yield* Submissions
      const theirSubmission = yield* submissions.create(theirs.id, theirBot.id, { data: requiredOnlyData() })
      const query = { limit: 10, cursor: null, createdAfter: null, createdBefore: null }
      expect(yield* Effect.flip(submissions.list(mine.id, theirBot.id, query))).toMatchObject({
        resource: "intake_bot"
      })
      expect(yield* Effect.flip(submissions.get(mine.id, theirBot.id, theirSubmission.id))).toMatchObject({
        resource: "intake_bot"
      })
      expect(yield* Effect.flip(submissions.get(mine.id, myBot.id, theirSubmission.id))).toMatchObject({
        resource: "submission"
      })
      expect(
        yield* Effect.flip(
          submissions.get(mine.id, makeIntakeBotId("bot_unknown"), makeSubmissionId("sub_unknown"))
        )
      ).toMatchObject({
        resource: "intake_bot"
      })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("remove deletes the submission and its messages; its events stay", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const created = yield* submissions.createForBot(bot.id, {
        data: requiredOnlyData(),
        messages: [{ role: "user", content: "hi" }]
      })
      yield* submissions.remove(created.id)
      expect(yield* Effect.flip(submissions.get(workspace.id, bot.id, created.id))).toMatchObject({
        resource: "submission"
      })
      expect(yield* Effect.flip(submissions.remove(created.id))).toMatchObject({ resource: "submission" })
      const { events } = yield* writtenFor(workspace.id)
      expect(events.map((event) => event.submissionId)).toContain(created.id)
      const bots = yield* (yield* IntakeBots).list(workspace.id, { limit: 10, cursor: null })
      expect(bots.items[0]!.submissionCount).toBe(0)
    }).pipe(Effect.provide(submissionsArea()))
  )
})
