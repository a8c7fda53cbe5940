import { describe, expect, it } from "@effect/vitest"
import {
  ContactRepository,
  EventOutbox,
  type FieldType,
  IntakeBots,
  IntakeBotsLive,
  makeIntakeBotId,
  makeSubmissionId,
  PlanLimitExceeded,
  type SchemaField,
  StorageUnavailable,
  Submissions,
  SubmissionsLive,
  UsageCounters
} from "@intake/domain"
import { everyFieldTypeSchema, requiredOnlyData, validSubmissionData, valuesByType } from "@intake/testing"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import { givenBot, givenWorkspace, memoryPorts, submissionsArea, writtenFor } from "./setup.js"

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

describe("the monthly quota", () => {
  it.effect("is the workspace's override when set; test and IN_PROGRESS submissions count", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace({ monthlySubmissionQuota: 3 })
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData(), isTest: true })
      yield* submissions.create(workspace.id, bot.id, { data: {}, status: "IN_PROGRESS" })
      yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      const error = yield* Effect.flip(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
      expect(error).toBeInstanceOf(PlanLimitExceeded)
      expect(error).toMatchObject({
        httpStatus: 429,
        details: { resource: "submissions", current: 3, max: 3 }
      })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("is the plan's when not overridden (Pro: 1,000)", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace({ plan: "pro" })
      const bot = yield* givenBot(workspace.id)
      const usage = yield* UsageCounters
      for (let i = 0; i < 999; i++) yield* usage.reserveSubmission(workspace.id, "2026-11", 1000)
      const submissions = yield* Submissions
      yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      expect(
        yield* Effect.flip(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
      ).toMatchObject({
        details: { current: 1000, max: 1000 }
      })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("rolls over at the start of the calendar month in UTC", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2026, 10, 30, 23, 59, 59, 999))
      const workspace = yield* givenWorkspace({ monthlySubmissionQuota: 1 })
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      expect(
        yield* Effect.flip(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
      ).toMatchObject({
        _tag: "PlanLimitExceeded"
      })
      yield* TestClock.setTime(Date.UTC(2026, 11, 1, 0, 0, 0, 0))
      const december = yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      expect(december.createdAt).toBe(Date.UTC(2026, 11, 1))
      expect(
        yield* Effect.flip(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
      ).toMatchObject({
        _tag: "PlanLimitExceeded"
      })
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("30 concurrent creates with 10 left create exactly 10; the rest are 429", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace({ monthlySubmissionQuota: 15 })
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      for (let i = 0; i < 5; i++)
        yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
      const results = yield* Effect.all(
        Array.from({ length: 30 }, () =>
          Effect.either(submissions.create(workspace.id, bot.id, { data: requiredOnlyData() }))
        ),
        { concurrency: "unbounded" }
      )
      expect(results.filter(Either.isRight)).toHaveLength(10)
      const refusals = results.filter(Either.isLeft).map((result) => result.left)
      expect(refusals).toHaveLength(20)
      for (const refusal of refusals)
        expect(refusal).toMatchObject({
          _tag: "PlanLimitExceeded",
          details: { resource: "submissions", current: 15, max: 15 }
        })
      expect((yield* writtenFor(workspace.id)).submissions).toHaveLength(15)
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a refused create leaves no submission, no event and no contact", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace({ monthlySubmissionQuota: 0 })
      const bot = yield* givenBot(workspace.id)
      expect(
        yield* Effect.flip((yield* Submissions).create(workspace.id, bot.id, { data: requiredOnlyData() }))
      ).toMatchObject({ _tag: "PlanLimitExceeded", details: { current: 0, max: 0 } })
      expect(yield* writtenFor(workspace.id)).toEqual({ events: [], contacts: [], submissions: [] })
    }).pipe(Effect.provide(submissionsArea()))
  )
})

describe("contacts and events", () => {
  it.effect("a COMPLETED submission with an email finds or creates its contact, case-insensitively", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const submissions = yield* Submissions
      const first = yield* submissions.create(workspace.id, bot.id, {
        data: requiredOnlyData({ name: "Ada Lovelace", email: "Ada@Example.com" })
      })
      const second = yield* submissions.create(workspace.id, bot.id, {
        data: requiredOnlyData({ name: "A. Lovelace", email: "ada@example.COM" })
      })
      const { contacts, events } = yield* writtenFor(workspace.id)
      expect(contacts).toHaveLength(1)
      expect(contacts[0]).toMatchObject({ email: "Ada@Example.com", name: "Ada Lovelace", createdAt: T0 })
      const contactId = contacts[0]!.id
      expect(contactId).toMatch(/^con_/)
      expect(
        events.map((event) => [event.type, event.submissionId, event.contactId, event.intakeBotId]).sort()
      ).toEqual(
        [
          ["contact.created", first.id, contactId, bot.id],
          ["submission.completed", first.id, contactId, bot.id],
          ["submission.completed", second.id, contactId, bot.id]
        ].sort()
      )
      expect(events.every((event) => event.id.startsWith("evt_") && event.createdAt === T0)).toBe(true)
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("the contact's name is null without a name field, and contacts are per workspace", () =>
    Effect.gen(function* () {
      const mine = yield* givenWorkspace()
      const theirs = yield* givenWorkspace()
      const schema: Array<SchemaField> = [
        { name: "full_name", label: "Full name", type: "text" },
        { name: "work_email", label: "Work email", type: "email" },
        { name: "private_email", label: "Private email", type: "email" }
      ]
      const submissions = yield* Submissions
      for (const workspace of [mine, theirs]) {
        const bot = yield* givenBot(workspace.id, { schema })
        yield* submissions.create(workspace.id, bot.id, {
          data: { full_name: "Grace Hopper", work_email: null, private_email: "grace@example.com" }
        })
        const { contacts, events } = yield* writtenFor(workspace.id)
        expect(contacts).toMatchObject([{ email: "grace@example.com", name: null }])
        expect(events.map((event) => event.type).sort()).toEqual(["contact.created", "submission.completed"])
      }
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("fields named like object internals are read only from the data given", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id, {
        schema: [
          { name: "constructor", label: "Builder", type: "email" },
          { name: "to_string", label: "Other", type: "text" }
        ]
      })
      const created = yield* (yield* Submissions).create(workspace.id, bot.id, { data: { to_string: "x" } })
      expect(created.aiSummary).toBe("Other: x")
      expect((yield* writtenFor(workspace.id)).contacts).toEqual([])
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a COMPLETED submission without an email emits submission.completed only", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id, { schema: [{ name: "name", label: "Name", type: "text" }] })
      yield* (yield* Submissions).create(workspace.id, bot.id, { data: { name: "Ada" } })
      const { contacts, events } = yield* writtenFor(workspace.id)
      expect(contacts).toEqual([])
      expect(events).toMatchObject([{ type: "submission.completed", contactId: null }])
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("an IN_PROGRESS submission emits nothing and creates no contact", () =>
    Effect.gen(function* () {
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      yield* (yield* Submissions).create(workspace.id, bot.id, {
        data: requiredOnlyData(),
        status: "IN_PROGRESS"
      })
      const written = yield* writtenFor(workspace.id)
      expect(written.submissions).toHaveLength(1)
      expect(written.events).toEqual([])
      expect(written.contacts).toEqual([])
    }).pipe(Effect.provide(submissionsArea()))
  )

  it.effect("a failure late in the unit of work undoes the quota, the submission and the events", () => {
    const failingContacts = Layer.succeed(ContactRepository, {
      findOrCreateWithEvents: () =>
        Effect.fail(new StorageUnavailable({ operation: "contacts.findOrCreateWithEvents" })),
      findById: () => Effect.fail(new StorageUnavailable({ operation: "contacts.findById" }))
    })
    const area = Layer.mergeAll(IntakeBotsLive, SubmissionsLive.pipe(Layer.provide(failingContacts))).pipe(
      Layer.provideMerge(memoryPorts())
    )
    return Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const error = yield* Effect.flip(
        (yield* Submissions).create(workspace.id, bot.id, { data: requiredOnlyData() })
      )
      expect(error).toBeInstanceOf(StorageUnavailable)
      expect(yield* writtenFor(workspace.id)).toEqual({ events: [], contacts: [], submissions: [] })
      expect(yield* (yield* UsageCounters).submissionsUsed(workspace.id, "2026-11")).toBe(0)
    }).pipe(Effect.provide(area))
  })
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
