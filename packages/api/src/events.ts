/**
 * The webhook payloads (docs/rules.md, Webhooks and deliveries) as wire schemas, for the OpenAPI
 * `webhooks` section. The payloads themselves are built by the domain's EventPayloads;
 * the type checks at the end keep these schemas and those builders in step.
 */
import type { EventPayloads } from "@intake/domain"
import { Schema } from "effect"
import { Count, SubmissionWire, Timestamp, WebhookEventName, WebhookStatusName } from "./wire.js"

const envelope = <T extends string, D extends Schema.Struct.Fields>(type: T, data: D) =>
  Schema.Struct({
    id: Schema.String.annotations({ description: "the event id (evt_…), also sent as webhook-id" }),
    type: Schema.Literal(type),
    timestamp: Timestamp,
    data: Schema.Struct(data)
  })

export const SubmissionCompletedEvent = envelope("submission.completed", {
  submission: SubmissionWire,
  intake_bot: Schema.Struct({ id: Schema.String, name: Schema.String })
}).annotations({ identifier: "SubmissionCompletedEvent" })

export const ContactCreatedEvent = envelope("contact.created", {
  contact: Schema.Struct({
    id: Schema.String,
    email: Schema.String,
    name: Schema.NullOr(Schema.String),
    created_at: Timestamp
  }),
  submission_id: Schema.String
}).annotations({ identifier: "ContactCreatedEvent" })

export const WebhookTestEvent = envelope("webhook.test", { webhook_id: Schema.String }).annotations({
  identifier: "WebhookTestEvent"
})

export const WebhookDisabledEvent = envelope("webhook.disabled", {
  webhook: Schema.Struct({
    id: Schema.String,
    url: Schema.String,
    description: Schema.String,
    events: Schema.Array(WebhookEventName),
    intake_bot_ids: Schema.Array(Schema.String),
    status: WebhookStatusName.annotations({
      description:
        "the endpoint's status when the payload was built (a redelivery after re-enabling shows it)"
    }),
    consecutive_fails: Count,
    last_delivery_at: Schema.NullOr(Timestamp),
    created_at: Timestamp
  }),
  reason: Schema.Literal("gone", "failing").annotations({
    description: "gone: the receiver answered 410 Gone; failing: deliveries failed for WEBHOOK_DISABLE_AFTER"
  }),
  disabled_at: Timestamp
}).annotations({
  identifier: "WebhookDisabledEvent",
  description:
    "Sent to the workspace's other active endpoints subscribed to `webhook.disabled` when the service disables an endpoint. Never carries a secret."
})

/** Each event type with its payload schema, in the order the documentation lists them. */
export const webhookEvents = [
  { type: "submission.completed", schema: SubmissionCompletedEvent, summary: "A submission was completed" },
  {
    type: "contact.created",
    schema: ContactCreatedEvent,
    summary: "A contact was created from a submission"
  },
  {
    type: "webhook.disabled",
    schema: WebhookDisabledEvent,
    summary: "The service disabled another endpoint of the workspace"
  },
  { type: "webhook.test", schema: WebhookTestEvent, summary: "Sent by POST /v1/webhooks/{id}/test" }
] as const

// Compile-time: what the domain sends is what these schemas describe, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const sameShapes: [
  Same<typeof SubmissionCompletedEvent.Type, EventPayloads.SubmissionCompletedPayload>,
  Same<typeof ContactCreatedEvent.Type, EventPayloads.ContactCreatedPayload>,
  Same<typeof WebhookTestEvent.Type, EventPayloads.TestPayload>,
  Same<typeof WebhookDisabledEvent.Type, EventPayloads.WebhookDisabledPayload>
] = [true, true, true, true]
void sameShapes

/** Any event a webhook endpoint receives, discriminated by `type`. */
export const WebhookEvent = Schema.Union(
  SubmissionCompletedEvent,
  ContactCreatedEvent,
  WebhookDisabledEvent,
  WebhookTestEvent
).annotations({
  identifier: "WebhookEvent",
  description: "Any event a webhook endpoint receives; `type` tells which."
})
export type WebhookEvent = typeof WebhookEvent.Type
