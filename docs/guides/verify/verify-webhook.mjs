// Verifies an Intake delivery (Standard Webhooks) with node:crypto only.
// rawBody: the request body exactly as it arrived (a Buffer), before any JSON parsing.
// headers: an object with lower-case header names, as Node's request.headers.
// Returns the event when the delivery is genuine and recent, otherwise null.
import { createHmac, timingSafeEqual } from "node:crypto"

const TOLERANCE_SECONDS = 5 * 60

export function verifyWebhook(rawBody, headers, secret) {
  const id = headers["webhook-id"]
  const timestamp = headers["webhook-timestamp"]
  const signatures = headers["webhook-signature"]
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return null
  // A delivery older (or newer) than five minutes is refused: a captured one cannot be replayed later.
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) {
    return null
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(rawBody).digest()
  // During a secret rotation the header holds two signatures ("v1,<new> v1,<old>"): one is enough.
  for (const entry of signatures.split(" ")) {
    const [version, signature] = entry.split(",")
    if (version !== "v1" || signature === undefined) continue
    const given = Buffer.from(signature, "base64")
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      return JSON.parse(rawBody.toString("utf8"))
    }
  }
  return null
}
