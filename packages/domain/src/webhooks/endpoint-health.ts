/**
 * An endpoint's delivery state after one attempt (docs/rules.md, Webhooks and deliveries): every attempt
 * sets last_delivery_at and last_delivery_ok; a success ends the failure streak, a
 * failure lengthens it. The service disables the endpoint at once on a 410 Gone, and
 * when the streak has lasted WEBHOOK_DISABLE_AFTER (counted from its first failure).
 */
import type { WebhookDisabledReason, WebhookEndpoint } from "../shared/models.js"
import { circuitAfterAttempt, DEFAULT_ISOLATION, type IsolationPolicy } from "./delivery-isolation.js"
import type { AttemptOutcome } from "./ports.js"

/**
 * Also moves the circuit breaker (delivery-isolation.ts): a success closes it; a
 * failure at or past the threshold (a failed probe too) opens it from the attempt's end.
 */
export const afterAttempt = (
  endpoint: WebhookEndpoint,
  outcome: AttemptOutcome,
  disableAfterMs: number,
  isolation: IsolationPolicy = DEFAULT_ISOLATION
): WebhookEndpoint => {
  if (outcome.ok)
    return {
      ...endpoint,
      lastDeliveryAt: outcome.at,
      lastDeliveryOk: true,
      consecutiveFails: 0,
      failingSince: null,
      circuitOpenUntil: null
    }
  const failingSince = endpoint.failingSince ?? outcome.at
  const gone = outcome.responseStatus === 410
  const failedTooLong = outcome.at - failingSince >= disableAfterMs
  const consecutiveFails = endpoint.consecutiveFails + 1
  return {
    ...endpoint,
    lastDeliveryAt: outcome.at,
    lastDeliveryOk: false,
    consecutiveFails,
    failingSince,
    circuitOpenUntil: circuitAfterAttempt(
      { ok: false, consecutiveFails, failingSince, finishedAt: outcome.at + (outcome.durationMs ?? 0) },
      isolation
    ),
    ...((gone || failedTooLong) && endpoint.status !== "disabled"
      ? { status: "disabled" as const, updatedAt: outcome.at }
      : {})
  }
}

/**
 * Why an attempt's outcome disabled the endpoint, or null when it did not (it was disabled
 * already, or stays enabled): a 410 is "gone", a streak of WEBHOOK_DISABLE_AFTER "failing".
 */
export const disabledBy = (
  previousStatus: WebhookEndpoint["status"],
  after: WebhookEndpoint,
  outcome: AttemptOutcome
): WebhookDisabledReason | null =>
  previousStatus !== "disabled" && after.status === "disabled"
    ? outcome.responseStatus === 410
      ? "gone"
      : "failing"
    : null
