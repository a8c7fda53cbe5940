/**
 * Recovery and the delivery log (docs/webhooks.md): events raised while an endpoint is
 * paused or disabled are recorded as skipped attempts; recover queues again, once each and
 * oldest first, what the endpoint has not received; the log filters, reads one attempt, and
 * says when an attempt was sent and when a pending one is due. Memory layers, TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Conflict,
  Deliveries,
  type Delivery,
  IntakeBots,
  makeIntakeBotId,
  makeWebhookId,
  makeWorkspaceId,
  ResourceNotFound,
  Submissions,
  ValidationFailed,
  Webhooks
} from "@intake/domain"
import { answer, newIntakeBot, type receiverDouble, requiredOnlyData } from "@intake/testing"
import { Effect, Either, TestClock } from "effect"
import { dispatchDue, givenWebhook, givenWorkspaceWithBot, MINUTE, NOW, SECOND, scene } from "./scene.js"

const retrying = () => scene({ settings: { retrySchedule: [5 * SECOND, 5 * MINUTE] } })

const setStatus = (workspaceId: string, webhookId: string, status: "active" | "paused") =>
  Effect.flatMap(Webhooks, (webhooks) =>
    webhooks.update(makeWorkspaceId(workspaceId), makeWebhookId(webhookId), { status })
  )

/** A completed submission one second after the previous one, so events have distinct times. */
const submit = (workspaceId: string, botId: string, email: string) =>
  Effect.gen(function* () {
    yield* TestClock.adjust(SECOND)
    return yield* (yield* Submissions).create(makeWorkspaceId(workspaceId), makeIntakeBotId(botId), {
      data: requiredOnlyData({ email })
    })
  })

const log = (workspaceId: string, webhookId: string, filters: Record<string, unknown> = {}) =>
  Effect.map(
    Effect.flatMap(Deliveries, (d) =>
      d.list(makeWorkspaceId(workspaceId), makeWebhookId(webhookId), { limit: 100, cursor: null, ...filters })
    ),
    (listed) => listed.items
  )

const recover = (workspaceId: string, webhookId: string, since: number, until: number | null = null) =>
  Effect.flatMap(Deliveries, (d) =>
    d.recover(makeWorkspaceId(workspaceId), makeWebhookId(webhookId), { since, until })
  )

/** The submission ids of the payloads the receiver got, in order. */
const receivedSubmissions = (receiver: ReturnType<typeof receiverDouble>) =>
  receiver.payloads().map((payload) => (payload.data as { submission: { id: string } }).submission.id)

describe("skipped attempts", () => {
  const { layer, receiver } = retrying()

  it.effect("a paused or disabled endpoint that takes the event records a skipped attempt, never sent", () =>
    Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const paused = yield* givenWebhook(workspaceId, ["submission.completed"])
      const pausedContactsOnly = yield* givenWebhook(workspaceId, ["contact.created"])
      const otherBot = yield* (yield* IntakeBots).create(workspaceId, newIntakeBot({ name: "Other" }))
      const pausedOtherBot = yield* givenWebhook(workspaceId, ["submission.completed"], [otherBot.id])
      for (const endpoint of [paused, pausedContactsOnly, pausedOtherBot])
        yield* setStatus(workspaceId, endpoint.id, "paused")
      const disabled = yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(410, "gone"))
      yield* submit(workspaceId, bot.id, "first@example.com")
      yield* dispatchDue
      expect((yield* (yield* Webhooks).get(workspaceId, disabled.id)).status).toBe("disabled")

      const sentBefore = receiver.sent.length
      const submission = yield* submit(workspaceId, bot.id, "second@example.com")
      expect(yield* dispatchDue).toEqual([])
      expect(receiver.sent.length).toBe(sentBefore)

      const [skipped] = yield* log(workspaceId, paused.id)
      expect(skipped).toMatchObject({
        status: "skipped",
        trigger: "event",
        attempt: 1,
        eventType: "submission.completed",
        error: "not sent: the webhook is paused",
        sentAt: null,
        nextRetryAt: null,
        responseStatus: null,
        durationMs: null
      })
      const [contactSkipped] = yield* log(workspaceId, pausedContactsOnly.id)
      expect(contactSkipped).toMatchObject({ status: "skipped", eventType: "contact.created" })
      expect(yield* log(workspaceId, pausedOtherBot.id)).toEqual([])
      const disabledLog = yield* log(workspaceId, disabled.id)
      expect(disabledLog[0]).toMatchObject({
        status: "skipped",
        error: "not sent: the webhook is disabled",
        createdAt: submission.createdAt
      })
      expect(disabledLog[1]).toMatchObject({ status: "failed", responseStatus: 410 })
    }).pipe(Effect.provide(layer))
  )
})

describe("recover", () => {
  it.effect(
    "after re-activation, queues each missed event once, oldest first, and nothing already received or pending",
    () => {
      const { layer, receiver } = retrying()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
        // Received: the first one.
        const received = yield* submit(workspaceId, bot.id, "a@example.com")
        yield* dispatchDue
        const outageStart = NOW + 2 * SECOND
        // The receiver fails, then answers 410: the endpoint is disabled.
        receiver.answerWith(answer(500), answer(410))
        const failed = yield* submit(workspaceId, bot.id, "b@example.com")
        yield* dispatchDue
        yield* TestClock.adjust(6 * SECOND)
        yield* dispatchDue
        expect((yield* (yield* Webhooks).get(workspaceId, endpoint.id)).status).toBe("disabled")
        const missed = [
          failed,
          yield* submit(workspaceId, bot.id, "c@example.com"),
          yield* submit(workspaceId, bot.id, "d@example.com")
        ]

        // Not while disabled: 409, nothing queued.
        const refused = yield* Effect.either(recover(workspaceId, endpoint.id, outageStart))
        expect(Either.isLeft(refused) && refused.left).toBeInstanceOf(Conflict)
        expect(yield* log(workspaceId, endpoint.id, { status: "pending" })).toEqual([])

        yield* setStatus(workspaceId, endpoint.id, "active")
        receiver.answerWith(answer(204))
        const before = receiver.sent.length
        const recovery = yield* recover(workspaceId, endpoint.id, NOW)
        expect(recovery).toEqual({ queued: 3, since: NOW, until: yield* TestClock.currentTimeMillis })
        // Twice: what is pending is not queued again.
        expect((yield* recover(workspaceId, endpoint.id, NOW)).queued).toBe(0)

        const queued = yield* log(workspaceId, endpoint.id, { status: "pending" })
        expect(queued.map((d) => d.trigger)).toEqual(["recover", "recover", "recover"])
        // b had attempts 1 and 2 (failed, then 410); c and d one skipped attempt each.
        expect(queued.map((d) => d.attempt).sort()).toEqual([2, 2, 3])
        const due = yield* TestClock.currentTimeMillis
        for (const attempt of queued) expect(attempt.nextRetryAt).toBe(due)

        yield* dispatchDue
        expect(receivedSubmissions(receiver).slice(before)).toEqual(missed.map((s) => s.id))
        expect(receivedSubmissions(receiver)).not.toContain(undefined)
        expect(receivedSubmissions(receiver).filter((id) => id === received.id)).toHaveLength(1)
        // Received now: a third call queues nothing.
        expect((yield* recover(workspaceId, endpoint.id, NOW)).queued).toBe(0)
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("a recovered attempt that fails is retried on the whole schedule again", () => {
    const { layer, receiver } = retrying()
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
      // Three attempts (the schedule has two retries): the event's schedule is used up.
      receiver.answerWith(answer(500))
      yield* submit(workspaceId, bot.id, "a@example.com")
      yield* dispatchDue
      yield* TestClock.adjust(6 * SECOND)
      yield* dispatchDue
      yield* TestClock.adjust(6 * MINUTE)
      yield* dispatchDue
      expect(yield* log(workspaceId, endpoint.id, { status: "pending" })).toEqual([])
      expect(yield* log(workspaceId, endpoint.id, { status: "failed" })).toHaveLength(3)

      expect((yield* recover(workspaceId, endpoint.id, NOW)).queued).toBe(1)
      const [recovered] = yield* dispatchDue
      expect(recovered).toMatchObject({ trigger: "recover", attempt: 4, status: "failed" })
      expect(recovered!.nextRetryAt).not.toBeNull()
      yield* TestClock.adjust(6 * SECOND)
      const [firstRetry] = yield* dispatchDue
      expect(firstRetry).toMatchObject({ trigger: "retry", attempt: 5, status: "failed" })
      expect(firstRetry!.nextRetryAt! - firstRetry!.sentAt!).toBeGreaterThanOrEqual(5 * MINUTE)
      // Five failures in a row opened the endpoint's circuit for as long as it has been
      // failing (about 6 minutes, docs/webhooks.md, Isolation): the last retry goes as its probe.
      yield* TestClock.adjust(13 * MINUTE)
      const [lastRetry] = yield* dispatchDue
      expect(lastRetry).toMatchObject({ trigger: "retry", attempt: 6, status: "failed", nextRetryAt: null })
      expect(yield* log(workspaceId, endpoint.id, { status: "pending" })).toEqual([])
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "takes only the window, the endpoint's events and bots, and nothing from before the endpoint",
    () => {
      const { layer } = retrying()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const otherBot = yield* (yield* IntakeBots).create(workspaceId, newIntakeBot({ name: "Other" }))
        const beforeEndpoint = yield* submit(workspaceId, bot.id, "early@example.com")
        yield* TestClock.adjust(SECOND)
        const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"], [bot.id])
        yield* setStatus(workspaceId, endpoint.id, "paused")
        const inWindow = [
          yield* submit(workspaceId, bot.id, "a@example.com"),
          yield* submit(workspaceId, bot.id, "b@example.com")
        ]
        yield* submit(workspaceId, otherBot.id, "other-bot@example.com")
        const after = yield* submit(workspaceId, bot.id, "late@example.com")
        yield* setStatus(workspaceId, endpoint.id, "active")

        const window = yield* recover(workspaceId, endpoint.id, NOW - MINUTE, inWindow[1]!.createdAt)
        expect(window.queued).toBe(2)
        for (const submission of inWindow)
          expect(
            yield* log(workspaceId, endpoint.id, { status: "pending", submissionId: submission.id })
          ).toMatchObject([{ trigger: "recover", attempt: 2 }])
        // Inclusive bounds: an event at exactly `since` is taken.
        expect((yield* recover(workspaceId, endpoint.id, after.createdAt, after.createdAt)).queued).toBe(1)
        expect((yield* recover(workspaceId, endpoint.id, beforeEndpoint.createdAt)).queued).toBe(0)
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("since after until is 400; another workspace's endpoint is 404", () => {
    const { layer } = retrying()
    return Effect.gen(function* () {
      const { workspaceId } = yield* givenWorkspaceWithBot
      const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
      const backwards = yield* Effect.either(recover(workspaceId, endpoint.id, NOW, NOW - 1))
      expect(Either.isLeft(backwards) && backwards.left).toBeInstanceOf(ValidationFailed)
      const elsewhere = yield* givenWorkspaceWithBot
      const foreign = yield* Effect.either(recover(elsewhere.workspaceId, endpoint.id, NOW))
      expect(Either.isLeft(foreign) && foreign.left).toBeInstanceOf(ResourceNotFound)
      // A window older than anything kept is simply empty.
      expect((yield* recover(workspaceId, endpoint.id, 0, MINUTE)).queued).toBe(0)
    }).pipe(Effect.provide(layer))
  })
})

describe("the delivery log", () => {
  const { layer, receiver } = retrying()

  it.effect(
    "filters by status, event type, submission and created range; cursors keep to their filters",
    () =>
      Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const endpoint = yield* givenWebhook(workspaceId, ["submission.completed", "contact.created"])
        receiver.answerWith(answer(204))
        const first = yield* submit(workspaceId, bot.id, "a@example.com")
        yield* dispatchDue
        receiver.answerWith(answer(500))
        const second = yield* submit(workspaceId, bot.id, "b@example.com")
        yield* dispatchDue
        const all = yield* log(workspaceId, endpoint.id)
        // 2 x (submission.completed + contact.created), the two failures' retries pending.
        expect(all).toHaveLength(6)
        const ids = (items: ReadonlyArray<Delivery>) => items.map((d) => d.id).sort()
        const where = (keep: (d: Delivery) => boolean) => ids(all.filter(keep))

        expect(ids(yield* log(workspaceId, endpoint.id, { status: "failed" }))).toEqual(
          where((d) => d.status === "failed")
        )
        expect(ids(yield* log(workspaceId, endpoint.id, { status: "pending" }))).toHaveLength(2)
        expect(ids(yield* log(workspaceId, endpoint.id, { eventType: "contact.created" }))).toEqual(
          where((d) => d.eventType === "contact.created")
        )
        const ofFirst = yield* log(workspaceId, endpoint.id, { submissionId: first.id })
        expect(ofFirst.map((d) => d.eventType).sort()).toEqual(["contact.created", "submission.completed"])
        expect(ofFirst.every((d) => d.status === "succeeded")).toBe(true)
        expect(yield* log(workspaceId, endpoint.id, { submissionId: second.id })).toHaveLength(4)
        expect(yield* log(workspaceId, endpoint.id, { submissionId: "sub_unknown" })).toEqual([])
        expect(ids(yield* log(workspaceId, endpoint.id, { createdBefore: first.createdAt }))).toEqual(
          where((d) => d.createdAt <= first.createdAt)
        )
        expect(ids(yield* log(workspaceId, endpoint.id, { createdAfter: second.createdAt }))).toEqual(
          where((d) => d.createdAt >= second.createdAt)
        )

        const deliveries = yield* Deliveries
        const page = yield* deliveries.list(workspaceId, endpoint.id, {
          limit: 1,
          cursor: null,
          status: "failed"
        })
        expect(page.nextCursor).not.toBeNull()
        const next = yield* deliveries.list(workspaceId, endpoint.id, {
          limit: 1,
          cursor: page.nextCursor,
          status: "failed"
        })
        expect(next.items[0]!.status).toBe("failed")
        const otherFilters = yield* Effect.either(
          deliveries.list(workspaceId, endpoint.id, { limit: 1, cursor: page.nextCursor, status: "pending" })
        )
        expect(Either.isLeft(otherFilters) && otherFilters.left).toBeInstanceOf(ValidationFailed)
      }).pipe(Effect.provide(layer))
  )

  it.effect("sent_at says when the request left; a pending attempt shows when it is due", () =>
    Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(503))
      yield* submit(workspaceId, bot.id, "due@example.com")
      const [queued] = yield* log(workspaceId, endpoint.id)
      const queuedAt = yield* TestClock.currentTimeMillis
      expect(queued).toMatchObject({ status: "pending", sentAt: null, nextRetryAt: queuedAt })
      yield* TestClock.adjust(3 * SECOND)
      const sentAt = yield* TestClock.currentTimeMillis
      const [failed] = yield* dispatchDue
      expect(failed!.sentAt).toBe(sentAt)
      const got = yield* (yield* Deliveries).get(workspaceId, endpoint.id, failed!.id)
      expect(got.sentAt).toBe(sentAt)
      expect(got.createdAt).toBe(queuedAt)
      const [retry] = yield* log(workspaceId, endpoint.id, { status: "pending" })
      // The retry is due when the failed attempt says, and its own row says so too.
      expect(retry!.nextRetryAt).toBe(got.nextRetryAt)
      expect(retry!.createdAt).toBe(sentAt)
      expect(retry!.sentAt).toBeNull()
    }).pipe(Effect.provide(layer))
  )

  it.effect("an address refused before sending leaves sent_at null", () => {
    const refusing = retrying()
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
      yield* submit(workspaceId, bot.id, "refused@example.com")
      // The name now resolves to a private address (DNS rebinding): no request is made.
      refusing.addresses["hooks.example.com"] = ["10.0.0.1"]
      const [failed] = yield* dispatchDue
      expect(failed).toMatchObject({ status: "failed", sentAt: null, responseStatus: null })
      expect(refusing.receiver.sent).toHaveLength(0)
      const [logged] = yield* log(workspaceId, endpoint.id, { status: "failed" })
      expect(logged!.sentAt).toBeNull()
    }).pipe(Effect.provide(refusing.layer))
  })

  it.effect("one delivery by id: 404 delivery for another endpoint's, 404 webhook first", () =>
    Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const endpoint = yield* givenWebhook(workspaceId, ["submission.completed"])
      const other = yield* givenWebhook(workspaceId, ["submission.completed"])
      yield* submit(workspaceId, bot.id, "one@example.com")
      const [mine] = yield* log(workspaceId, endpoint.id)
      const deliveries = yield* Deliveries
      expect(yield* deliveries.get(workspaceId, endpoint.id, mine!.id)).toEqual(mine)
      const notOfIt = yield* Effect.either(deliveries.get(workspaceId, other.id, mine!.id))
      expect(Either.isLeft(notOfIt) && notOfIt.left).toMatchObject({ resource: "delivery" })
      const elsewhere = yield* givenWorkspaceWithBot
      const foreign = yield* Effect.either(deliveries.get(elsewhere.workspaceId, endpoint.id, mine!.id))
      expect(Either.isLeft(foreign) && foreign.left).toMatchObject({ resource: "webhook" })
    }).pipe(Effect.provide(layer))
  )
})
