/**
 * An endpoint's delivery state after one attempt (docs/rules.md, Webhooks and deliveries): every attempt
 * sets last_delivery_at and last_delivery_ok; a success ends the failure streak, a
 * failure lengthens it. The service disables the endpoint at once on a 410 Gone, and
 * when the streak has lasted WEBHOOK_DISABLE_AFTER (counted from its first failure).
 */
import type { WebhookEndpoint } from "../models.js"
import type { AttemptOutcome } from "../ports.js"

export const afterAttempt = (
  endpoint: WebhookEndpoint,
  outcome: AttemptOutcome,
  disableAfterMs: number
): WebhookEndpoint => {
  if (outcome.ok)
    return {
      ...endpoint,
      lastDeliveryAt: outcome.at,
      lastDeliveryOk: true,
      consecutiveFails: 0,
      failingSince: null
    }
  const failingSince = endpoint.failingSince ?? outcome.at
  const gone = outcome.responseStatus === 410
  const failedTooLong = outcome.at - failingSince >= disableAfterMs
  return {
    ...endpoint,
    lastDeliveryAt: outcome.at,
    lastDeliveryOk: false,
    consecutiveFails: endpoint.consecutiveFails + 1,
    failingSince,
    ...((gone || failedTooLong) && endpoint.status !== "disabled"
      ? { status: "disabled" as const, updatedAt: outcome.at }
      : {})
  }
}
