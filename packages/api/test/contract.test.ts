import { OpenApi } from "@effect/platform"
import type { IntakeBot, WebhookEndpoint } from "@intake/domain"
import { makeIntakeBotId, makeWebhookId, makeWorkspaceId } from "@intake/domain"
import { describe, expect, it } from "vitest"
import {
  AdminApi,
  IntakeApi,
  intakeBotToWire,
  isoTimestamp,
  webhookToWire,
  webhookWithSecretToWire
} from "../src/index.js"

const bot: IntakeBot = {
  id: makeIntakeBotId("bot_1"),
  workspaceId: makeWorkspaceId("ws_1"),
  name: "Contact form",
  description: "",
  status: "ACTIVE",
  shareSlug: "Ab3dE6gH",
  schema: [{ name: "email", label: "Email", type: "email", required: true }],
  schemaVersion: 1,
  createdAt: Date.UTC(2026, 10, 21, 10),
  updatedAt: Date.UTC(2026, 10, 21, 10, 0, 0, 5)
}

const webhook: WebhookEndpoint = {
  id: makeWebhookId("wh_1"),
  workspaceId: makeWorkspaceId("ws_1"),
  url: "https://example.com/hook",
  events: ["submission.completed"],
  status: "active",
  description: "",
  intakeBotIds: [],
  secret: "whsec_c2VjcmV0",
  previousSecret: null,
  previousSecretExpiresAt: null,
  lastDeliveryAt: null,
  lastDeliveryOk: null,
  consecutiveFails: 0,
  failingSince: null,
  rateLimit: null,
  circuitOpenUntil: null,
  createdAt: 0,
  updatedAt: 0
}

describe("wire mappers", () => {
  it("render timestamps in UTC with exactly three fraction digits", () => {
    expect(isoTimestamp(Date.UTC(2026, 10, 21, 10))).toBe("2026-11-21T10:00:00.000Z")
    expect(intakeBotToWire(bot).updated_at).toBe("2026-11-21T10:00:00.005Z")
  })

  it("serve the bot's slug as share_url and no workspace id", () => {
    const wire = intakeBotToWire(bot)
    expect(wire.share_url).toBe("Ab3dE6gH")
    expect(Object.keys(wire).sort()).toEqual(
      ["created_at", "description", "id", "name", "schema", "share_url", "status", "updated_at"].sort()
    )
  })

  it("leave the webhook secret out of every shape but the create answer", () => {
    expect(webhookToWire(webhook, 0)).not.toHaveProperty("secret")
    expect(webhookWithSecretToWire(webhook, 0).secret).toBe("whsec_c2VjcmV0")
    expect(webhookToWire(webhook, 0).last_delivery_at).toBeNull()
  })
})

describe("the OpenAPI documents", () => {
  it("list every v1 path with bearer security, the delivery endpoints included", () => {
    const served = OpenApi.fromApi(IntakeApi)
    expect(Object.keys(served.paths).sort()).toEqual([
      "/v1/intake-bots",
      "/v1/intake-bots/{id}",
      "/v1/intake-bots/{id}/submissions",
      "/v1/intake-bots/{id}/submissions/{submissionId}",
      "/v1/webhooks",
      "/v1/webhooks/{id}",
      "/v1/webhooks/{id}/deliveries",
      "/v1/webhooks/{id}/deliveries/{deliveryId}",
      "/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver",
      "/v1/webhooks/{id}/recover",
      "/v1/webhooks/{id}/secret/rotate",
      "/v1/webhooks/{id}/test"
    ])
    expect(served.components.securitySchemes).toMatchObject({ bearer: { type: "http", scheme: "bearer" } })
    expect(Object.keys(OpenApi.fromApi(AdminApi).paths)).toContain("/admin/workspaces/{id}/api-keys")
  })
})
