/**
 * Webhook signing secrets in the Standard Webhooks format: `whsec_` and the base64 of 32
 * random bytes. The HMAC key is the decoded part after the prefix.
 */
import { decodeBase64, encodeBase64 } from "./base64.js"

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
