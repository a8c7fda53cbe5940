/** The monthly submission quota, and the contacts and events a create records (docs/rules.md, Limits and rate limits). */
import { describe, expect, it } from "@effect/vitest"
import {
  ContactRepository,
  IntakeBotsLive,
  PlanLimitExceeded,
  type SchemaField,
  StorageUnavailable,
  Submissions,
  SubmissionsLive,
  UsageCounters
} from "@intake/domain"
import { requiredOnlyData } from "@intake/testing"
import { Effect, Either, Layer, TestClock } from "effect"
import { givenBot, givenWorkspace, memoryPorts, submissionsArea, writtenFor } from "./setup.js"

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0)

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
