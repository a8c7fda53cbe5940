/**
 * What a webhook delivery carries (docs/rules.md, Webhooks and deliveries): `{ id, type, timestamp, data }`,
 * rebuilt from the event's sources at each attempt; and which endpoints an event goes to.
 */
import type { Contact, DomainEvent, IntakeBot, SubmissionDetail, WebhookEndpoint } from "../models.js"
import { isoTimestamp, type SubmissionShape, submissionShape } from "./wire-shapes.js"

/** The type of the event POST /webhooks/:id/test sends. */
export const TEST_EVENT_TYPE = "webhook.test"

export interface Payload<T extends string, D> {
  readonly id: string
  readonly type: T
  readonly timestamp: string
  readonly data: D
}

export type SubmissionCompletedPayload = Payload<
  "submission.completed",
  {
    readonly submission: SubmissionShape
    readonly intake_bot: { readonly id: string; readonly name: string }
  }
>

export type ContactCreatedPayload = Payload<
  "contact.created",
  {
    readonly contact: {
      readonly id: string
      readonly email: string
      readonly name: string | null
      readonly created_at: string
    }
    readonly submission_id: string
  }
>

export type TestPayload = Payload<typeof TEST_EVENT_TYPE, { readonly webhook_id: string }>

export type WebhookPayload = SubmissionCompletedPayload | ContactCreatedPayload | TestPayload

export const submissionCompletedPayload = (
  event: DomainEvent,
  submission: SubmissionDetail,
  bot: IntakeBot
): SubmissionCompletedPayload => ({
  id: event.id,
  type: "submission.completed",
  timestamp: isoTimestamp(event.createdAt),
  data: { submission: submissionShape(submission), intake_bot: { id: bot.id, name: bot.name } }
})

export const contactCreatedPayload = (event: DomainEvent, contact: Contact): ContactCreatedPayload => ({
  id: event.id,
  type: "contact.created",
  timestamp: isoTimestamp(event.createdAt),
  data: {
    contact: {
      id: contact.id,
      email: contact.email,
      name: contact.name,
      created_at: isoTimestamp(contact.createdAt)
    },
    submission_id: event.submissionId
  }
})

export const testPayload = (eventId: string, webhookId: string, at: number): TestPayload => ({
  id: eventId,
  type: TEST_EVENT_TYPE,
  timestamp: isoTimestamp(at),
  data: { webhook_id: webhookId }
})

/**
 * True when the endpoint takes this event: it subscribes to the type, and its
 * intake_bot_ids is empty (every bot) or names the event's bot, in the same workspace.
 * The endpoint's status is the caller's concern (only ACTIVE ones are queued for).
 */
export const endpointTakes = (endpoint: WebhookEndpoint, event: DomainEvent): boolean =>
  endpoint.workspaceId === event.workspaceId &&
  endpoint.events.includes(event.type) &&
  (endpoint.intakeBotIds.length === 0 || endpoint.intakeBotIds.includes(event.intakeBotId))
