/**
 * The dispatcher: claims due delivery attempts and makes them, at most `concurrency` at
 * a time. A claim reads what its attempts need in one go (Deliveries.prepare); each
 * attempt is sent in a fiber of its own, and the finished ones are written down together
 * (batch-writer.ts, Deliveries.record): a few statements per batch, not per attempt.
 * It sleeps until the earliest pending attempt is due (at most `pollIntervalMs`), and wakes at once on a DeliveryWakeups signal (an event was queued) or when a slot
 * frees. Any number of dispatchers may share one store: claims are leased.
 *
 * Stopping (interruption, e.g. SIGTERM through NodeRuntime.runMain): a claimed attempt
 * runs uninterruptibly to its end (at most the receiver's 10 s limit), so a stopping
 * dispatcher finishes what it claimed and claims nothing more. The loop itself is
 * claim-loop.ts, shared with the summary runner.
 */
import {
  type AttemptMade,
  Deliveries,
  DeliveryWakeups,
  type PreparedAttempt,
  type StorageUnavailable,
  TraceContext
} from "@intake/domain"
import { Metrics } from "@intake/node"
import { Effect, Option } from "effect"
import { batchWriter } from "./batch-writer.js"
import { claimLoop } from "./claim-loop.js"
import { attemptOutcome, observeAttempt } from "./metrics.js"

/** The most finished attempts one unit of work writes. */
const RECORD_BATCH = 256
/**
 * A batch of fewer than this many waits this long for more (batch-writer.ts): an event's
 * attempts to its endpoints finish a few milliseconds apart. The receivers have their
 * deliveries by then: only the slots wait.
 */
const RECORD_LINGER_MS = 5
const RECORD_LINGER_BELOW = 8

export interface DispatcherOptions {
  /** Attempts in flight at once. */
  readonly concurrency: number
  /** Longest sleep between two looks at the queue. */
  readonly pollIntervalMs: number
  /** Identifies this dispatcher's claims; unique per dispatcher. */
  readonly claimToken: string
}

/**
 * An attempt as a span (docs/operations.md, Traces), with its endpoint, event, outcome and
 * receiver's status: a child of the span of the request that raised its event when the
 * event kept one (TraceContext, migration 16), so a create and its deliveries share a trace;
 * a trace of its own otherwise. The statements it makes are spans beneath it.
 */
const tracedAttempt =
  (
    attempt: (prepared: PreparedAttempt) => Effect.Effect<AttemptMade, StorageUnavailable>,
    sampleRatio: number
  ) =>
  (prepared: PreparedAttempt): Effect.Effect<AttemptMade, StorageUnavailable> => {
    const { delivery, event } = prepared
    const parent = TraceContext.parseTraceParent(event?.traceParent)
    // An event's trace was recorded when it kept one; an attempt of no trace is sampled as a new one.
    if (!TraceContext.sampled(parent, sampleRatio)) return attempt(prepared)
    return Effect.withTracerEnabled(
      Effect.useSpan(
        "webhook attempt",
        {
          kind: "client",
          captureStackTrace: false,
          root: true,
          ...Option.match(parent, {
            onNone: () => ({}),
            onSome: (parent) => ({ parent })
          }),
          attributes: {
            "intake.webhook_id": delivery.webhookId,
            "intake.event_id": delivery.eventId,
            "intake.event_type": delivery.eventType,
            "intake.delivery_id": delivery.id,
            "intake.attempt": delivery.attempt,
            "intake.trigger": delivery.trigger,
            ...(event?.submissionId ? { "intake.submission_id": event.submissionId } : {}),
            ...(event?.requestId === undefined ? {} : { "intake.request_id": event.requestId })
          }
        },
        (span) =>
          Effect.tap(Effect.withParentSpan(attempt(prepared), span), (made) =>
            Effect.sync(() => {
              span.attribute("intake.outcome", attemptOutcome(made))
              if (made._tag === "Sent" && made.result.responseStatus !== null)
                span.attribute("http.response.status_code", made.result.responseStatus)
              if (made._tag === "Sent" && made.result.error !== null)
                span.attribute("intake.error", made.result.error)
            })
          )
      ),
      true
    )
  }

export const runDispatcher = (options: DispatcherOptions) =>
  Effect.gen(function* () {
    const deliveries = yield* Deliveries
    const wakeups = yield* DeliveryWakeups
    const metrics = yield* Effect.serviceOption(Metrics)
    // docs/operations.md, Traces: decided once; off, an attempt is the use case's own.
    const tracing = yield* Effect.serviceOption(TraceContext.Tracing)
    const attempt = Option.isNone(tracing)
      ? deliveries.attempt
      : tracedAttempt(deliveries.attempt, tracing.value.sampleRatio)
    // Opened before the claim loop, so closed after it: the attempts still running are written.
    const recorder = yield* batchWriter({
      write: (made: ReadonlyArray<AttemptMade>) => deliveries.record(made, options.claimToken),
      maxBatch: RECORD_BATCH,
      lingerMs: RECORD_LINGER_MS,
      lingerBelow: RECORD_LINGER_BELOW
    })

    /** Claims, then reads what sending each needs in one go; when that read fails the claims are given back. */
    const claim = (free: number) =>
      Effect.flatMap(
        deliveries.claim(free, options.claimToken),
        ({ deliveries: claimed, more, claimedAt, sources }) =>
          claimed.length === 0
            ? Effect.succeed({ items: [], more })
            : deliveries.prepare(claimed, claimedAt, sources).pipe(
                Effect.map((items) => ({ items, more })),
                Effect.tapErrorCause((cause) =>
                  Effect.zipRight(
                    Effect.logWarning(
                      `could not read what ${claimed.length} claimed attempts need; their claims are given back`,
                      cause
                    ),
                    Effect.ignore(
                      deliveries.release(
                        claimed.map((delivery) => delivery.id),
                        options.claimToken
                      )
                    )
                  )
                )
              )
      )

    const dispatchOne = (prepared: PreparedAttempt) =>
      attempt(prepared).pipe(
        Effect.tap((made) => observeAttempt(metrics, made)),
        Effect.flatMap(recorder.submit),
        Effect.tapErrorCause((cause) =>
          Effect.logWarning(
            `delivery ${prepared.delivery.id}: attempt not recorded; its claim was given back if the store allowed, else its lease returns it`,
            cause
          )
        ),
        Effect.uninterruptible
      )

    return yield* claimLoop({
      claims: "due deliveries",
      slots: () => options.concurrency,
      claim,
      run: dispatchOne,
      nextDueAt: deliveries.nextDueAt,
      wakeup: wakeups.next,
      pollIntervalMs: options.pollIntervalMs,
      onStop: (inFlight) =>
        Effect.logInfo({ message: "dispatcher stopping: finishing the attempts it claimed", inFlight })
    })
  }).pipe(
    Effect.scoped,
    // After the scope: every claimed attempt has finished by now.
    Effect.onInterrupt(() => Effect.logInfo("dispatcher stopped"))
  )
