/**
 * Webhook signing secrets in the Standard Webhooks format: `whsec_` and the base64 of 32
 * random bytes. The HMAC key is the decoded part after the prefix.
 */

import { decodeBase64, encodeBase64 } from "../shared/base64.js"
import type { ValidationIssue } from "../shared/errors.js"
import type { WebhookEndpoint } from "../shared/models.js"

export const SECRET_PREFIX = "whsec_"
export const SECRET_BYTES = 32

/** A new secret from `randomBytes` (the Crypto port's). */
export const newWebhookSecret = (randomBytes: (size: number) => Uint8Array): string =>
  `${SECRET_PREFIX}${encodeBase64(randomBytes(SECRET_BYTES))}`

/** The HMAC key of a secret; null when the text is not a `whsec_` secret. */
export const secretKey = (secret: string): Uint8Array | null => {
  if (!secret.startsWith(SECRET_PREFIX)) return null
  const key = decodeBase64(secret.slice(SECRET_PREFIX.length))
  return key === null || key.length === 0 ? null : key
}

const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/

/** True for a secret as this service issues them (32 bytes). */
export const isWebhookSecret = (text: string): boolean => SECRET_PATTERN.test(text)

// ---------------------------------------------------------------- rotation (docs/webhooks.md, "Secret rotation")

/** How long the previous secret keeps signing after a rotation, unless the request says. */
export const DEFAULT_GRACE_PERIOD_SECONDS = 24 * 60 * 60
/** The longest overlap a rotation may ask for: 7 days. */
export const MAX_GRACE_PERIOD_SECONDS = 7 * 24 * 60 * 60

/** The issues of a rotation's `grace_period_seconds`: a whole number from 0 to 7 days. */
export const gracePeriodIssues = (seconds: number): ReadonlyArray<ValidationIssue> =>
  Number.isInteger(seconds) && seconds >= 0 && seconds <= MAX_GRACE_PERIOD_SECONDS
    ? []
    : [
        {
          path: "grace_period_seconds",
          message: `must be a whole number of seconds from 0 to ${MAX_GRACE_PERIOD_SECONDS} (7 days)`
        }
      ]

/** The secrets a delivery made at `now` is signed with: the current one, then the previous one during its grace period. */
export const signingSecrets = (
  endpoint: Pick<WebhookEndpoint, "secret" | "previousSecret" | "previousSecretExpiresAt">,
  now: number
): ReadonlyArray<string> =>
  endpoint.previousSecret !== null &&
  endpoint.previousSecretExpiresAt !== null &&
  now < endpoint.previousSecretExpiresAt
    ? [endpoint.secret, endpoint.previousSecret]
    : [endpoint.secret]
