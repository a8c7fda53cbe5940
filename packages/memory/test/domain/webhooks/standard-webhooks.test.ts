import { createHmac, randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { StandardWebhooks, WebhookSecret } from "@intake/domain/internal"
import { Webhook } from "standardwebhooks"

const nodeHmac: StandardWebhooks.HmacSha256 = (key, message) =>
  new Uint8Array(createHmac("sha256", key).update(message).digest())

describe("webhook secrets", () => {
  it("are whsec_ and the base64 of 32 random bytes", () => {
    const bytes = new Uint8Array(randomBytes(32))
    const secret = WebhookSecret.newWebhookSecret((size) => (size === 32 ? bytes : new Uint8Array(0)))
    expect(secret).toBe(`whsec_${Buffer.from(bytes).toString("base64")}`)
    expect(WebhookSecret.isWebhookSecret(secret)).toBe(true)
    expect(WebhookSecret.secretKey(secret)).toEqual(bytes)
  })

  it("a text without the prefix or with bad base64 has no key", () => {
    expect(WebhookSecret.secretKey("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw0W4wjSrUzPQ=")).toBeNull()
    expect(WebhookSecret.secretKey("whsec_not base64!")).toBeNull()
    expect(WebhookSecret.secretKey("whsec_")).toBeNull()
  })
})

describe("Standard Webhooks signatures", () => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`
  const input = {
    secret,
    messageId: "evt_01jd2x8k3m",
    timestampSeconds: Math.floor(Date.now() / 1000),
    body: JSON.stringify({ id: "evt_01jd2x8k3m", type: "submission.completed", data: { ü: "✓" } })
  }

  it("sign HMAC-SHA256 of id.timestamp.body keyed with the decoded secret", () => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64")
    const expected = createHmac("sha256", key)
      .update(`${input.messageId}.${input.timestampSeconds}.${input.body}`)
      .digest("base64")
    expect(StandardWebhooks.sign(nodeHmac, input)).toBe(`v1,${expected}`)
  })

  it("matches the standardwebhooks package, which verifies the headers", () => {
    const headers = StandardWebhooks.signatureHeaders(nodeHmac, input)
    const reference = new Webhook(secret)
    expect(headers["webhook-signature"]).toBe(
      reference.sign(input.messageId, new Date(input.timestampSeconds * 1000), input.body)
    )
    expect(reference.verify(input.body, headers)).toEqual(JSON.parse(input.body))
  })

  it("a changed body, id or timestamp no longer verifies", () => {
    const headers = StandardWebhooks.signatureHeaders(nodeHmac, input)
    const reference = new Webhook(secret)
    expect(() => reference.verify(`${input.body} `, headers)).toThrow()
    expect(() => reference.verify(input.body, { ...headers, "webhook-id": "evt_other" })).toThrow()
    expect(() =>
      reference.verify(input.body, { ...headers, "webhook-timestamp": String(input.timestampSeconds + 1) })
    ).toThrow()
  })

  it("refuses to sign with a text that is not a secret", () => {
    expect(() => StandardWebhooks.sign(nodeHmac, { ...input, secret: "plain" })).toThrow()
  })
})
