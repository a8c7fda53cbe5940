/**
 * The dispatcher: claims due delivery attempts and makes them, at most `concurrency` at
 * a time. It sleeps until the earliest pending attempt is due (at most `pollIntervalMs`),
 * and wakes at once on a DeliveryWakeups signal (an event was queued) or when a slot
 * frees. Any number of dispatchers may share one store: claims are leased.
 *
 * Stopping (interruption, e.g. SIGTERM through NodeRuntime.runMain): a claimed attempt
 * runs uninterruptibly to its end (at most the receiver's 10 s limit), so a stopping
 * dispatcher finishes what it claimed and claims nothing more. The loop itself is
 * claim-loop.ts, shared with the summary runner.
 */
import { Deliveries, type Delivery, DeliveryWakeups } from "@intake/domain"
import { Effect } from "effect"
import { claimLoop } from "./claim-loop.js"

export interface DispatcherOptions {
  /** Attempts in flight at once. */
  readonly concurrency: number
  /** Longest sleep between two looks at the queue. */
  readonly pollIntervalMs: number
  /** Identifies this dispatcher's claims; unique per dispatcher. */
  readonly claimToken: string
}

export const runDispatcher = (options: DispatcherOptions) =>
  Effect.gen(function* () {
    const deliveries = yield* Deliveries
    const wakeups = yield* DeliveryWakeups

    const dispatchOne = (delivery: Delivery) =>
      deliveries.dispatch(delivery, options.claimToken).pipe(
        Effect.tapErrorCause((cause) =>
          Effect.logWarning(
            `delivery ${delivery.id}: attempt not recorded; its claim was given back if the store allowed, else its lease returns it`,
            cause
          )
        ),
        Effect.uninterruptible
      )

    return yield* claimLoop({
      claims: "due deliveries",
      slots: () => options.concurrency,
      claim: (free) => deliveries.claimDue(free, options.claimToken),
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
