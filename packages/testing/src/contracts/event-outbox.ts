import { expect, layer } from "@effect/vitest"
import {
  DeliveryRepository,
  EventOutbox,
  IntakeBotRepository,
  makeWebhookId,
  SubmissionRepository,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import { domainEventRecord, intakeBotRecord, submissionRecord } from "../fixtures-submissions.js"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export const eventOutboxContract = (
  name: string,
  theLayer: Layer.Layer<
    EventOutbox | SubmissionRepository | IntakeBotRepository | WorkspaceRepository | DeliveryRepository
  >
): void =>
  layer(checkedStores(theLayer))(`EventOutbox contract (${name})`, (it) => {
    const givenSubmission = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      const bot = intakeBotRecord(workspace.id)
      yield* (yield* IntakeBotRepository).insert(bot)
      const submission = submissionRecord(bot)
      yield* (yield* SubmissionRepository).insert(submission, [])
      return submission
    })

    it.effect("appended events are found by id, with the request that raised them and its trace", () =>
      Effect.gen(function* () {
        const outbox = yield* EventOutbox
        const submission = yield* givenSubmission
        const completed = domainEventRecord(submission, {
          requestId: "req_0123abcd",
          traceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        })
        const created = domainEventRecord(submission, { type: "contact.created", contactId: uniqueId("con") })
        yield* outbox.append([completed, created])
        expect(yield* outbox.findById(completed.id)).toEqual(Option.some(completed))
        expect(yield* outbox.findById(created.id)).toEqual(Option.some(created))
        expect(Option.isNone(yield* outbox.findById(uniqueId("evt")))).toBe(true)
        yield* outbox.append([])
      })
    )

    it.effect("attempts appended with their events are queued, due at the time given", () =>
      Effect.gen(function* () {
        const outbox = yield* EventOutbox
        const deliveries = yield* DeliveryRepository
        const submission = yield* givenSubmission
        const completed = domainEventRecord(submission, { requestId: "client-trace.1" })
        const created = domainEventRecord(submission, { type: "contact.created", contactId: uniqueId("con") })
        const webhookId = uniqueId("wh")
        const attempts = [completed, created].map((event) =>
          aDelivery({
            webhookId: makeWebhookId(webhookId),
            eventId: event.id,
            eventType: event.type,
            createdAt: submission.createdAt
          })
        )
        yield* outbox.append([completed, created], { deliveries: attempts, dueAt: submission.createdAt })
        expect(yield* outbox.findById(completed.id)).toEqual(Option.some(completed))
        expect(yield* outbox.findById(created.id)).toEqual(Option.some(created))
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), completed.id)).toEqual([attempts[0]])
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), created.id)).toEqual([attempts[1]])
        const due = yield* deliveries.nextDueAt(submission.createdAt)
        expect(Option.isSome(due) && due.value <= submission.createdAt).toBe(true)
      })
    )

    it.effect("events outlive their submission, so a redelivery can tell that its source is gone", () =>
      Effect.gen(function* () {
        const outbox = yield* EventOutbox
        const submission = yield* givenSubmission
        const event = domainEventRecord(submission)
        yield* outbox.append([event])
        yield* (yield* SubmissionRepository).delete(submission.id)
        expect(yield* outbox.findById(event.id)).toEqual(Option.some(event))
      })
    )
  })
