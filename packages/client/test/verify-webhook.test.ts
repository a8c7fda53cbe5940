/**
 * verifyWebhook: a delivery signed with the secret within the tolerance verifies. Whatever a
 * sender (or an attacker) puts in the headers, and whatever secret the receiver was configured
 * with, a delivery that does not verify is a WebhookVerificationError, never another exception (a receiver maps that error to 400, and
 * anything else to 500). A tolerance that would switch the timestamp check off is refused.
 */
import { createHmac } from "node:crypto"
import { FastCheck } from "effect"
import { describe, expect, it } from "vitest"
import { verifyWebhook, WebhookVerificationError } from "../src/index.js"

const secretBytes = Buffer.from("intake-test-secret-0123456789abc")
const secret = `whsec_${secretBytes.toString("base64")}`
const body = JSON.stringify({
  id: "evt_1",
  type: "webhook.test",
  timestamp: "",
  data: { webhook_id: "wh_1" }
})
const NOW_SECONDS = 1_795_000_000
const now = () => NOW_SECONDS * 1000
const signature = (timestamp: number | string, key: Buffer = secretBytes) =>
  createHmac("sha256", key).update(`evt_1.${timestamp}.${body}`).digest("base64")
const headers = (overrides: Record<string, string> = {}) => ({
  "webhook-id": "evt_1",
  "webhook-timestamp": String(NOW_SECONDS),
  "webhook-signature": `v1,${signature(NOW_SECONDS)}`,
  ...overrides
})

/** What verifyWebhook threw (or `verified` when it did not throw). */
const outcome = (run: () => Promise<unknown>) =>
  run().then(
    () => "verified" as const,
    (error: unknown) => error
  )

describe("verifyWebhook", () => {
  it("returns the event, typed by its type, for a valid signature (any of several)", async () => {
    const sent = headers({ "webhook-signature": `v1,AAAA v1,${signature(NOW_SECONDS)}` })
    const event = await verifyWebhook(body, sent, secret, { now })
    expect(event.type === "webhook.test" ? event.data.webhook_id : "").toBe("wh_1")
    // A fetch Headers works as well as Node's request.headers.
    await expect(verifyWebhook(body, new Headers(headers()), secret, { now })).resolves.toMatchObject({
      id: "evt_1"
    })
  })

  it("refuses an altered body, another secret, and a timestamp outside 5 minutes", async () => {
    await expect(
      verifyWebhook(body.replace("wh_1", "wh_2"), headers(), secret, { now })
    ).rejects.toBeInstanceOf(WebhookVerificationError)
    const other = `whsec_${Buffer.from("other").toString("base64")}`
    await expect(verifyWebhook(body, headers(), other, { now })).rejects.toBeInstanceOf(
      WebhookVerificationError
    )
    const stampedAt = (seconds: number) =>
      headers({ "webhook-timestamp": String(seconds), "webhook-signature": `v1,${signature(seconds)}` })
    for (const seconds of [NOW_SECONDS - 310, NOW_SECONDS + 310]) {
      await expect(verifyWebhook(body, stampedAt(seconds), secret, { now })).rejects.toBeInstanceOf(
        WebhookVerificationError
      )
    }
    await expect(verifyWebhook(body, stampedAt(NOW_SECONDS - 290), secret, { now })).resolves.toMatchObject({
      type: "webhook.test"
    })
  })
})

describe("verifyWebhook on malformed input", () => {
  it("verifies the well-formed delivery these tests alter", async () => {
    await expect(verifyWebhook(body, headers(), secret, { now })).resolves.toMatchObject({ id: "evt_1" })
  })

  it.each([
    ["a one-character signature", "v1,a"],
    ["a signature cut short", `v1,${signature(NOW_SECONDS).slice(0, 13)}`],
    ["a lone padding character", "v1,="],
    ["padding in the middle", "v1,AA=A"],
    ["an empty signature", "v1,"],
    ["a signature with no version", signature(NOW_SECONDS)]
  ])("refuses %s with WebhookVerificationError", async (_, malformed) => {
    const error = await outcome(() =>
      verifyWebhook(body, headers({ "webhook-signature": malformed }), secret, { now })
    )
    expect(error).toBeInstanceOf(WebhookVerificationError)
  })

  it("skips a malformed signature and verifies the valid one beside it", async () => {
    const both = headers({ "webhook-signature": `v1,a v1,${signature(NOW_SECONDS)}` })
    await expect(verifyWebhook(body, both, secret, { now })).resolves.toMatchObject({ id: "evt_1" })
  })

  it.each([
    ["one base64 character", "whsec_a"],
    ["a cut secret", secret.slice(0, -3)],
    ["characters outside base64", "whsec_not*base64"],
    ["nothing after the prefix", "whsec_"],
    ["an empty secret", ""]
  ])("refuses a secret of %s with WebhookVerificationError", async (_, malformed) => {
    const error = await outcome(() => verifyWebhook(body, headers(), malformed, { now }))
    expect(error).toBeInstanceOf(WebhookVerificationError)
  })

  it("refuses a secret that is not a string (an unset environment variable) with WebhookVerificationError", async () => {
    const unset: string | undefined = process.env.INTAKE_TEST_SECRET_THAT_IS_NEVER_SET
    const error = await outcome(() => verifyWebhook(body, headers(), unset as string, { now }))
    expect(error).toBeInstanceOf(WebhookVerificationError)
  })

  it("refuses a tolerance that is not a finite number of seconds, 0 or more, before reading the delivery", async () => {
    // A delivery stamped in 1970, correctly signed: NaN used to turn the timestamp check off.
    const stale = headers({ "webhook-timestamp": "1", "webhook-signature": `v1,${signature(1)}` })
    for (const toleranceSeconds of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
      const error = await outcome(() => verifyWebhook(body, stale, secret, { now, toleranceSeconds }))
      expect(error, String(toleranceSeconds)).toBeInstanceOf(RangeError)
    }
    await expect(verifyWebhook(body, stale, secret, { now, toleranceSeconds: 0 })).rejects.toBeInstanceOf(
      WebhookVerificationError
    )
    await expect(verifyWebhook(body, headers(), secret, { now, toleranceSeconds: 0 })).resolves.toMatchObject(
      { id: "evt_1" }
    )
  })

  it("answers every generated malformed signature, secret, timestamp or id with WebhookVerificationError", async () => {
    const base64ish = FastCheck.stringMatching(/^[A-Za-z0-9+/=]{0,50}$/)
    const anyText = FastCheck.string({ maxLength: 60 })
    const signatureHeader = FastCheck.oneof(
      base64ish.map((text) => `v1,${text}`),
      anyText,
      FastCheck.array(
        FastCheck.oneof(
          base64ish.map((text) => `v1,${text}`),
          anyText
        ),
        { maxLength: 4 }
      ).map((entries) => entries.join(" "))
    )
    const secretText = FastCheck.oneof(
      base64ish.map((text) => `whsec_${text}`),
      base64ish,
      anyText
    )
    await FastCheck.assert(
      FastCheck.asyncProperty(
        FastCheck.record({
          signature: FastCheck.option(signatureHeader, { nil: undefined }),
          secret: FastCheck.option(secretText, { nil: undefined }),
          timestamp: FastCheck.option(FastCheck.oneof(anyText, FastCheck.nat().map(String)), {
            nil: undefined
          }),
          id: FastCheck.option(anyText, { nil: undefined })
        }),
        async (altered) => {
          const sent = headers({
            ...(altered.signature === undefined ? {} : { "webhook-signature": altered.signature }),
            ...(altered.timestamp === undefined ? {} : { "webhook-timestamp": altered.timestamp }),
            ...(altered.id === undefined ? {} : { "webhook-id": altered.id })
          })
          const result = await outcome(() => verifyWebhook(body, sent, altered.secret ?? secret, { now }))
          if (result !== "verified") expect(result).toBeInstanceOf(WebhookVerificationError)
        }
      ),
      { numRuns: 500, seed: 41 }
    )
  })
})
