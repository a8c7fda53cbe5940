/**
 * An example request and answer for every v1 operation, shown in the OpenAPI document (and
 * sent by the docs page's "try it"). Typed against the wire schemas, and decoded by them in
 * a test, so an example cannot drift from the contract. The request examples are what the
 * demo workspace's "Contact form" bot accepts.
 */
import type { WebhookEvent } from "./events.js"
import type * as V1 from "./v1.js"

const BOT = "bot_01jd8r5m3c6k9v2x4z7b0n1q2s"
const SUBMISSION = "sub_01jd8r7k2w5y8a1c4e6g9j2m5p"
const WEBHOOK = "wh_01jd8r9p4r7t0w3y6a9c2e5g8j"
const DELIVERY = "dlv_01jd8rb2m5p8s1v4x7z0b3d6f9"
const EVENT = "evt_01jd8ra6t9w2y5b8d1f4h7k0m3"
const CREATED = "2026-11-21T10:00:00.000Z"
const UPDATED = "2026-11-21T10:05:00.000Z"

const contactData = {
  name: "Ada Lovelace",
  email: "ada@example.com",
  topic: "sales",
  message: "Hello"
}

const contactSchema: V1.IntakeBotOneEncoded["data"]["intake_bot"]["schema"] = [
  { name: "name", label: "Name", type: "text", required: true },
  { name: "email", label: "Email", type: "email", required: true },
  { name: "topic", label: "Topic", type: "select", required: false, options: ["sales", "support", "other"] },
  { name: "message", label: "Message", type: "long_text", required: false }
]

const pagination = { has_more: false, next_cursor: null }

const submission = {
  id: SUBMISSION,
  data: contactData,
  status: "COMPLETED" as const,
  ai_summary: "Name: Ada Lovelace, Email: ada@example.com, Topic: sales, Message: Hello",
  is_test: false,
  file_count: 0
}

const webhook = {
  id: WEBHOOK,
  url: "https://example.com/hooks/intake",
  events: ["submission.completed" as const],
  status: "active" as const,
  description: "CRM sync",
  intake_bot_ids: [],
  last_delivery_at: null,
  last_delivery_ok: null,
  consecutive_fails: 0,
  rate_limit: null,
  circuit: "closed" as const,
  circuit_retry_at: null,
  previous_secret_expires_at: null,
  created_at: CREATED,
  updated_at: CREATED
}

const delivery = {
  id: DELIVERY,
  webhook_id: WEBHOOK,
  event_id: EVENT,
  event_type: "webhook.test",
  attempt: 1,
  trigger: "test" as const,
  status: "succeeded" as const,
  response_status: 204,
  response_body: "",
  error: null,
  duration_ms: 42,
  next_retry_at: null,
  sent_at: CREATED,
  created_at: CREATED,
  request_id: null
}

/** Per operation: the request body (for those that take one) and the success answer. */
export const operationExamples = {
  listIntakeBots: {
    response: {
      success: true,
      data: {
        intake_bots: [
          {
            id: BOT,
            name: "Contact form",
            status: "ACTIVE",
            submission_count: 1,
            created_at: CREATED,
            updated_at: CREATED
          }
        ],
        pagination
      }
    } satisfies V1.IntakeBotListEncoded
  },
  getIntakeBot: {
    response: {
      success: true,
      data: {
        intake_bot: {
          id: BOT,
          name: "Contact form",
          status: "ACTIVE",
          description: "Collects a name, an email address, a topic and a message.",
          share_url: `https://intake.example.com/b/${BOT}`,
          schema: contactSchema,
          created_at: CREATED,
          updated_at: CREATED
        }
      }
    } satisfies V1.IntakeBotOneEncoded
  },
  listSubmissions: {
    response: {
      success: true,
      data: {
        submissions: [
          { ...submission, message_count: 0, schema_version: 1, created_at: CREATED, updated_at: CREATED }
        ],
        schema: contactSchema.map(({ name, label, type }) => ({ name, label, type })),
        pagination: { has_more: true, next_cursor: "eyJjIjoiMjAyNi0xMS0yMVQxMDowMDowMC4wMDBaIn0" }
      }
    } satisfies V1.SubmissionListEncoded
  },
  getSubmission: {
    response: {
      success: true,
      data: {
        submission: {
          ...submission,
          schema_version: 1,
          intake_bot_id: BOT,
          messages: [],
          created_at: CREATED,
          updated_at: CREATED
        }
      }
    } satisfies V1.SubmissionOneEncoded
  },
  createSubmission: {
    request: { data: contactData, status: "COMPLETED" } satisfies V1.CreateSubmissionBodyEncoded,
    response: {
      success: true,
      data: { submission: { id: SUBMISSION, status: "COMPLETED", created_at: CREATED } }
    } satisfies V1.SubmissionCreatedEncoded
  },
  listWebhooks: {
    response: { success: true, data: { webhooks: [webhook], pagination } } satisfies V1.WebhookListEncoded
  },
  getWebhook: {
    response: { success: true, data: { webhook } } satisfies V1.WebhookOneEncoded
  },
  createWebhook: {
    request: {
      url: "https://example.com/hooks/intake",
      events: ["submission.completed"],
      description: "CRM sync"
    } satisfies V1.CreateWebhookBodyEncoded,
    response: {
      success: true,
      data: { webhook: { ...webhook, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" } }
    } satisfies V1.WebhookCreatedEncoded
  },
  updateWebhook: {
    request: { status: "paused" } satisfies V1.UpdateWebhookBodyEncoded,
    response: {
      success: true,
      data: { webhook: { ...webhook, status: "paused", updated_at: UPDATED } }
    } satisfies V1.WebhookOneEncoded
  },
  deleteWebhook: {
    response: { success: true, data: { id: WEBHOOK, deleted: true } } satisfies V1.DeletedEncoded
  },
  rotateWebhookSecret: {
    request: { grace_period_seconds: 86400 } satisfies V1.RotateWebhookSecretBodyEncoded,
    response: {
      success: true,
      data: {
        webhook: {
          ...webhook,
          secret: "whsec_Q2hhbmdlZCBzZWNyZXQgZm9yIHRoZSBleGFtcGxlIQ==",
          previous_secret_expires_at: "2026-11-22T10:05:00.000Z",
          updated_at: UPDATED
        }
      }
    } satisfies V1.WebhookSecretRotatedEncoded
  },
  testWebhook: {
    response: {
      success: true,
      data: {
        delivery: {
          ...delivery,
          status: "pending",
          response_status: null,
          response_body: null,
          duration_ms: null,
          sent_at: null
        }
      }
    } satisfies V1.DeliveryOneEncoded
  },
  listDeliveries: {
    response: { success: true, data: { deliveries: [delivery], pagination } } satisfies V1.DeliveryListEncoded
  },
  getDelivery: {
    response: { success: true, data: { delivery } } satisfies V1.DeliveryOneEncoded
  },
  recoverWebhook: {
    request: { since: "2026-11-20T08:00:00.000Z" } satisfies V1.RecoverWebhookBodyEncoded,
    response: {
      success: true,
      data: { recovery: { queued: 212, since: "2026-11-20T08:00:00.000Z", until: UPDATED } }
    } satisfies V1.RecoveryOneEncoded
  },
  redeliver: {
    response: {
      success: true,
      data: {
        delivery: {
          ...delivery,
          id: "dlv_01jd8rc8q1t4w7z0c3f6h9k2n5",
          event_type: "submission.completed",
          trigger: "redeliver",
          status: "pending",
          response_status: null,
          response_body: null,
          duration_ms: null,
          sent_at: null
        }
      }
    } satisfies V1.DeliveryOneEncoded
  }
} as const

/** One example of each webhook event, by type. */
export const webhookEventExamples = {
  "submission.completed": {
    id: EVENT,
    type: "submission.completed",
    timestamp: CREATED,
    data: {
      submission: {
        ...submission,
        schema_version: 1,
        intake_bot_id: BOT,
        messages: [],
        created_at: CREATED,
        updated_at: CREATED
      },
      intake_bot: { id: BOT, name: "Contact form" }
    }
  },
  "contact.created": {
    id: "evt_01jd8ra6t9w2y5b8d1f4h7k0m4",
    type: "contact.created",
    timestamp: CREATED,
    data: {
      contact: {
        id: "con_01jd8ra6t9w2y5b8d1f4h7k0m5",
        email: "ada@example.com",
        name: "Ada Lovelace",
        created_at: CREATED
      },
      submission_id: SUBMISSION
    }
  },
  "webhook.disabled": {
    id: "evt_01jd8ra6t9w2y5b8d1f4h7k0m7",
    type: "webhook.disabled",
    timestamp: UPDATED,
    data: {
      webhook: {
        id: "wh_01jd8rb7a2c5e8g1j4m7p0r3t7",
        url: "https://old.example.com/hooks/intake",
        description: "Legacy CRM",
        events: ["submission.completed"],
        intake_bot_ids: [],
        status: "disabled",
        consecutive_fails: 1,
        last_delivery_at: UPDATED,
        created_at: CREATED
      },
      reason: "gone",
      disabled_at: UPDATED
    }
  },
  "webhook.test": {
    id: "evt_01jd8ra6t9w2y5b8d1f4h7k0m6",
    type: "webhook.test",
    timestamp: CREATED,
    data: { webhook_id: WEBHOOK }
  }
} as const satisfies { readonly [T in WebhookEvent["type"]]: Extract<WebhookEvent, { type: T }> }
