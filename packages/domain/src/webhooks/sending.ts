/**
 * Sending an attempt (docs/webhooks.md, How the engine sends): the body signed with Standard
 * Webhooks, the receiver's address checked, the answer kept within its limit; and what an
 * attempt sent becomes (its record, its endpoint's outcome, its log line).
 */
import { Clock, Effect, Either } from "effect"
import type { Delivery, DomainEvent, WebhookDisabledReason, WebhookEndpoint } from "../shared/models.js"
import { Crypto } from "../shared/ports.js"
import type { WebhookPayload } from "./event-payloads.js"
import { AddressResolver, type AttemptOutcome, ReceiverClient } from "./ports.js"
import { verifyReceiverUrl } from "./receiver-address.js"
import type { SendResult } from "./services.js"
import { signatureHeaders } from "./standard-webhooks.js"
import { signingSecrets } from "./webhook-secret.js"
import { WebhookSettings } from "./webhook-settings.js"

/** The most of a receiver's answer an attempt keeps. */
export const RESPONSE_BODY_LIMIT = 1024
export const USER_AGENT = "Intake-Webhooks/1"

/** The sender over the receivers' client, the name resolver and the signing key's HMAC. */
export const makeSender = Effect.gen(function* () {
  const client = yield* ReceiverClient
  const resolver = yield* AddressResolver
  const crypto = yield* Crypto
  const webhookSettings = yield* WebhookSettings

  /**
   * Signs and sends; a refused address or an unreachable receiver is a failed attempt, not an
   * error. `gatedAt`: the moment a rate limit's gate let it start, which is then its `sent_at`
   * (the gate spaces those, docs/webhooks.md, "How the engine sends").
   */
  const send = (endpoint: WebhookEndpoint, payload: WebhookPayload, gatedAt?: number) =>
    Effect.gen(function* () {
      const startedAt = gatedAt ?? (yield* Clock.currentTimeMillis)
      const body = JSON.stringify(payload)
      // During a rotation's grace period the previous secret signs too (docs/webhooks.md, "Secret rotation").
      const [secret, ...previous] = signingSecrets(endpoint, startedAt)
      const headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        ...signatureHeaders(
          crypto.hmacSha256,
          {
            secret: secret ?? endpoint.secret,
            messageId: payload.id,
            timestampSeconds: Math.floor(startedAt / 1000),
            body
          },
          previous
        )
      }
      let sentAt: number | null = null
      const outcome = yield* verifyReceiverUrl(endpoint.url, webhookSettings).pipe(
        Effect.provideService(AddressResolver, resolver),
        Effect.zipRight(Effect.map(Clock.currentTimeMillis, (at) => (sentAt = gatedAt ?? at))),
        Effect.flatMap(() => client.send({ url: endpoint.url, headers, body })),
        Effect.either
      )
      const durationMs = (yield* Clock.currentTimeMillis) - startedAt
      if (Either.isLeft(outcome)) {
        const error = outcome.left
        const message =
          error._tag === "ValidationFailed"
            ? `not sent: the receiver URL ${error.issues.map((issue) => issue.message).join("; ")}`
            : error._tag === "StorageUnavailable"
              ? "not sent: the receiver's name could not be resolved"
              : error.message
        return {
          ok: false,
          responseStatus: null,
          responseBody: null,
          error: message,
          retryAfter: null,
          durationMs,
          startedAt,
          sentAt
        } satisfies SendResult
      }
      const response = outcome.right
      return {
        ok: response.status >= 200 && response.status < 300,
        responseStatus: response.status,
        responseBody: response.body.slice(0, RESPONSE_BODY_LIMIT),
        error: null,
        retryAfter: response.retryAfter,
        durationMs,
        startedAt,
        sentAt
      } satisfies SendResult
    })

  return send
})

export const finishedAttempt = (
  pending: Delivery,
  result: SendResult,
  nextRetryAt: number | null
): Delivery => ({
  ...pending,
  status: result.ok ? "succeeded" : "failed",
  responseStatus: result.responseStatus,
  responseBody: result.responseBody,
  error: result.error,
  durationMs: result.durationMs,
  nextRetryAt,
  sentAt: result.sentAt
})

export const outcomeOf = (result: SendResult): AttemptOutcome => ({
  ok: result.ok,
  responseStatus: result.responseStatus,
  at: result.startedAt,
  durationMs: result.durationMs
})

/** The one line saying an endpoint was disabled, and why; logged once its unit of work committed. */
export const logDisabled = (
  disabled: { endpoint: WebhookEndpoint; reason: WebhookDisabledReason; notified: number } | null
) =>
  disabled === null
    ? Effect.void
    : Effect.logWarning({
        message: "webhook endpoint disabled",
        webhookId: disabled.endpoint.id,
        workspaceId: disabled.endpoint.workspaceId,
        reason:
          disabled.reason === "gone"
            ? "the receiver answered 410 Gone"
            : "deliveries failed for WEBHOOK_DISABLE_AFTER",
        notifiedEndpoints: disabled.notified
      })

/** One log line per attempt made or dropped: ids and outcome, never the secret or the payload. */
export const logAttempt = (delivery: Delivery, event: DomainEvent | null = null) =>
  Effect.logInfo({
    message: "delivery attempt",
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    eventId: delivery.eventId,
    // The submission and the request that raised the event (docs/operations.md, Request
    // ids); left
    // undefined, the logger writes the id of the request this runs for (a test send's).
    submissionId: event?.submissionId ?? null,
    requestId: event?.requestId,
    eventType: delivery.eventType,
    attempt: delivery.attempt,
    trigger: delivery.trigger,
    status: delivery.status,
    responseStatus: delivery.responseStatus,
    durationMs: delivery.durationMs,
    ...(delivery.error === null ? {} : { error: delivery.error })
  })
