/**
 * What a webhook delivery carries (docs/rules.md, Webhooks and deliveries): `{ id, type, timestamp, data }`,
 * rebuilt from the event's sources at each attempt; and which endpoints an event goes to.
 */

import { makeIntakeBotId, makeSubmissionId } from "../shared/ids.js"
import type {
  Contact,
  DomainEvent,
  EventType,
  IntakeBot,
  SubmissionDetail,
  WebhookDisabledReason,
  WebhookEndpoint
} from "../shared/models.js"
import { isoOrNull, isoTimestamp, type SubmissionShape, submissionShape } from "../shared/wire-shapes.js"

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

/** The endpoint as a webhook.disabled payload shows it: never its secrets. */
export interface DisabledWebhookShape {
  readonly id: string
  readonly url: string
  readonly description: string
  readonly events: ReadonlyArray<EventType>
  readonly intake_bot_ids: ReadonlyArray<string>
  readonly status: WebhookEndpoint["status"]
  readonly consecutive_fails: number
  readonly last_delivery_at: string | null
  readonly created_at: string
}

export type WebhookDisabledPayload = Payload<
  "webhook.disabled",
  {
    readonly webhook: DisabledWebhookShape
    readonly reason: WebhookDisabledReason
    readonly disabled_at: string
  }
>

export type WebhookPayload =
  | SubmissionCompletedPayload
  | ContactCreatedPayload
  | TestPayload
  | WebhookDisabledPayload

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
 * The webhook.disabled event (docs/webhooks.md, "Webhook notifications"): `reason` and
 * `disabled_at` are the event's; the endpoint is shown as it is when the payload is built.
 */
export const webhookDisabledPayload = (
  event: DomainEvent,
  endpoint: WebhookEndpoint
): WebhookDisabledPayload => ({
  id: event.id,
  type: "webhook.disabled",
  timestamp: isoTimestamp(event.createdAt),
  data: {
    webhook: {
      id: endpoint.id,
      url: endpoint.url,
      description: endpoint.description,
      events: endpoint.events,
      intake_bot_ids: endpoint.intakeBotIds,
      status: endpoint.status,
      consecutive_fails: endpoint.consecutiveFails,
      last_delivery_at: isoOrNull(endpoint.lastDeliveryAt),
      created_at: isoTimestamp(endpoint.createdAt)
    },
    reason: event.disabledReason ?? "failing",
    disabled_at: isoTimestamp(event.createdAt)
  }
})

/** The outbox event telling a workspace that the service disabled one of its endpoints. */
export const webhookDisabledEvent = (
  id: string,
  endpoint: WebhookEndpoint,
  reason: WebhookDisabledReason,
  at: number
): DomainEvent => ({
  id,
  workspaceId: endpoint.workspaceId,
  type: "webhook.disabled",
  intakeBotId: makeIntakeBotId(""),
  submissionId: makeSubmissionId(""),
  contactId: null,
  webhookId: endpoint.id,
  disabledReason: reason,
  createdAt: at
})

/**
 * True when the endpoint takes this event: it subscribes to the type, and its
 * intake_bot_ids is empty (every bot) or names the event's bot, in the same workspace.
 * A webhook.disabled event goes to the workspace's other subscribed endpoints, whatever
 * their intake_bot_ids. The endpoint's status is the caller's concern (only ACTIVE ones are queued for).
 */
export const endpointTakes = (endpoint: WebhookEndpoint, event: DomainEvent): boolean =>
  endpoint.workspaceId === event.workspaceId &&
  endpoint.events.includes(event.type) &&
  (event.type === "webhook.disabled"
    ? // About an endpoint, not a bot: every subscriber but the disabled endpoint itself.
      endpoint.id !== event.webhookId
    : endpoint.intakeBotIds.length === 0 || endpoint.intakeBotIds.includes(event.intakeBotId))
