/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the signed content is
 * `{msg id}.{timestamp seconds}.{body}`, the key the base64-decoded secret after
 * `whsec_`, the signature `v1,` and the base64 HMAC-SHA256. Receivers verify it with the
 * `standardwebhooks` or `svix` packages.
 */
import { encodeBase64 } from "../shared/base64.js"
import { secretKey } from "./webhook-secret.js"

/** HMAC-SHA256 as the Crypto port gives it. */
export type HmacSha256 = (key: Uint8Array, message: string) => Uint8Array

export interface SignatureInput {
  /** The `whsec_…` secret of the endpoint. */
  readonly secret: string
  /** The message id sent as `webhook-id` (the event id). */
  readonly messageId: string
  /** Unix seconds of this attempt, sent as `webhook-timestamp`. */
  readonly timestampSeconds: number
  /** The exact body text sent. */
  readonly body: string
}

export const signedContent = (input: Omit<SignatureInput, "secret">): string =>
  `${input.messageId}.${input.timestampSeconds}.${input.body}`

/** The `webhook-signature` value. Throws on a secret that is not `whsec_…`: ours always are. */
export const sign = (hmac: HmacSha256, input: SignatureInput): string => {
  const key = secretKey(input.secret)
  if (key === null) throw new Error("not a whsec_ secret")
  return `v1,${encodeBase64(hmac(key, signedContent(input)))}`
}

/**
 * The three headers of a delivery attempt. With `otherSecrets` (the previous secret during
 * a rotation's grace period), `webhook-signature` carries one space-separated signature per
 * secret, the current one first: a receiver accepts the message when any of them verifies.
 */
export const signatureHeaders = (
  hmac: HmacSha256,
  input: SignatureInput,
  otherSecrets: ReadonlyArray<string> = []
): {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
} => ({
  "webhook-id": input.messageId,
  "webhook-timestamp": String(input.timestampSeconds),
  "webhook-signature": [input.secret, ...otherSecrets]
    .map((secret) => sign(hmac, { ...input, secret }))
    .join(" ")
})
