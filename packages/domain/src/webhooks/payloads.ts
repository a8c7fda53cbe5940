/**
 * The payload of an attempt, rebuilt from its sources as they are now (docs/webhooks.md):
 * the event in the outbox and the submission, bot, contact or endpoint it names. A source
 * gone (SourceGone) closes the attempt unsent.
 */
import { Data, Effect, Option } from "effect"
import type { Delivery, DomainEvent } from "../shared/models.js"
import {
  ContactRepository,
  EventOutbox,
  IntakeBotRepository,
  SubmissionRepository
} from "../submissions/ports.js"
import {
  contactCreatedPayload,
  submissionCompletedPayload,
  TEST_EVENT_TYPE,
  testPayload,
  type WebhookPayload,
  webhookDisabledPayload
} from "./event-payloads.js"
import { DeliveryRepository, type DispatchSources } from "./ports.js"

export /** The source of an event is gone: its payload cannot be rebuilt. */
class SourceGone extends Data.TaggedError("SourceGone")<{ readonly what: string }> {}

/** The payload builders over the stores their sources are read from. */
export const makePayloads = Effect.gen(function* () {
  const repository = yield* DeliveryRepository
  const outbox = yield* EventOutbox
  const submissions = yield* SubmissionRepository
  const bots = yield* IntakeBotRepository
  const contacts = yield* ContactRepository

  const gone = (what: string) => Effect.fail(new SourceGone({ what }))

  /** The payload of an outbox event, rebuilt from its sources as they are now. */
  const eventPayload = (event: DomainEvent) =>
    Effect.gen(function* () {
      if (event.type === "webhook.disabled") {
        const endpoint =
          event.webhookId === undefined ? Option.none() : yield* repository.endpoint(event.webhookId)
        if (Option.isNone(endpoint)) return yield* gone("webhook endpoint")
        return webhookDisabledPayload(event, endpoint.value) as WebhookPayload
      }
      if (event.type === "submission.completed") {
        const submission = yield* submissions.findInBot(
          event.workspaceId,
          event.intakeBotId,
          event.submissionId
        )
        if (Option.isNone(submission)) return yield* gone("submission")
        const bot = yield* bots.findById(event.intakeBotId)
        if (Option.isNone(bot)) return yield* gone("intake bot")
        return submissionCompletedPayload(event, submission.value, bot.value) as WebhookPayload
      }
      const contact =
        event.contactId === null
          ? Option.none()
          : yield* contacts.findById(event.workspaceId, event.contactId)
      if (Option.isNone(contact)) return yield* gone("contact")
      return contactCreatedPayload(event, contact.value) as WebhookPayload
    })

  /** The payload of any attempt: a test event is its own source; others come from the outbox. */
  const payloadOf = (delivery: Delivery) =>
    Effect.gen(function* () {
      if (delivery.eventType === TEST_EVENT_TYPE) {
        const first = (yield* repository.attemptsOf(delivery.webhookId, delivery.eventId))[0] ?? delivery
        return testPayload(delivery.eventId, delivery.webhookId, first.createdAt) as WebhookPayload
      }
      const event = yield* outbox.findById(delivery.eventId)
      if (Option.isNone(event)) return yield* gone("event")
      return yield* eventPayload(event.value)
    })

  /**
   * The payload of a claimed attempt from the sources its claim read; the rare kinds whose
   * sources are not among them (a test event, webhook.disabled) are read as `payloadOf` reads them.
   */
  const payloadFromSources = (delivery: Delivery, sources: DispatchSources | undefined) =>
    Effect.gen(function* () {
      if (sources === undefined || delivery.eventType === TEST_EVENT_TYPE) return yield* payloadOf(delivery)
      const event = sources.event
      if (event === null) return yield* gone("event")
      if (event.type === "submission.completed") {
        if (sources.submission === null) return yield* gone("submission")
        if (sources.bot === null) return yield* gone("intake bot")
        return submissionCompletedPayload(event, sources.submission, sources.bot) as WebhookPayload
      }
      if (event.type === "contact.created") {
        if (sources.contact === null) return yield* gone("contact")
        return contactCreatedPayload(event, sources.contact) as WebhookPayload
      }
      return yield* eventPayload(event)
    })

  return { payloadOf, payloadFromSources }
})
