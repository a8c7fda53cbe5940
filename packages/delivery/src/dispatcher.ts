/**
 * The dispatcher: claims due delivery attempts and makes them, at most `concurrency` at
 * a time. It sleeps until the earliest pending attempt is due (at most `pollIntervalMs`),
 * and wakes at once on a DeliveryWakeups signal (an event was queued) or when a slot
 * frees. Any number of dispatchers may share one store: claims are leased.
 *
 * Stopping (interruption, e.g. SIGTERM through NodeRuntime.runMain): a claimed attempt
 * runs uninterruptibly to its end (at most the receiver's 10 s limit), so a stopping
 * dispatcher finishes what it claimed and claims nothing more.
 */
import { Deliveries, type Delivery, DeliveryWakeups } from "@intake/domain"
import { type Cause, Clock, Duration, Effect, FiberSet, Option, Queue, Ref } from "effect"

export interface DispatcherOptions {
  /** Attempts in flight at once. */
  readonly concurrency: number
  /** Longest sleep between two looks at the queue. */
  readonly pollIntervalMs: number
  /** Identifies this dispatcher's claims; unique per dispatcher. */
  readonly claimToken: string
}

/** Shortest sleep, so that a due attempt another dispatcher holds does not make this one spin. */
const MIN_SLEEP_MS = 5

export const runDispatcher = (options: DispatcherOptions) =>
  Effect.gen(function* () {
    const deliveries = yield* Deliveries
    const wakeups = yield* DeliveryWakeups
    const fibers = yield* FiberSet.make<Delivery | undefined>()
    const inFlight = yield* Ref.make(0)
    const slotFreed = yield* Queue.sliding<void>(1)

    const dispatchOne = (delivery: Delivery) =>
      deliveries.dispatch(delivery, options.claimToken).pipe(
        Effect.tapErrorCause((cause) =>
          Effect.logWarning(
            `delivery ${delivery.id}: attempt not recorded; its claim was given back if the store allowed, else its lease returns it`,
            cause
          )
        ),
        Effect.orElseSucceed(() => undefined),
        Effect.ensuring(
          Effect.zipRight(
            Ref.update(inFlight, (n) => n - 1),
            Queue.offer(slotFreed, undefined)
          )
        ),
        Effect.uninterruptible
      )

    // A store that stays down fails every poll: the first failure is logged with its cause,
    // the rest are not until claiming works again (DatabaseState logs the outage itself).
    let claimFailing = false
    const claimOutcome = (failed: boolean, cause?: Cause.Cause<unknown>) => {
      if (failed === claimFailing) return Effect.void
      claimFailing = failed
      return failed
        ? Effect.logWarning(
            "could not claim due deliveries; retrying at each poll, quietly until it works",
            cause
          )
        : Effect.logInfo("claiming due deliveries again")
    }

    /** Claims and starts as many as there are free slots; answers whether every slot was filled. */
    const fill = Effect.uninterruptible(
      Effect.gen(function* () {
        const free = options.concurrency - (yield* Ref.get(inFlight))
        if (free <= 0) return false
        const claimed = yield* deliveries.claimDue(free, options.claimToken).pipe(
          Effect.tap(() => claimOutcome(false)),
          Effect.tapErrorCause((cause) => claimOutcome(true, cause)),
          Effect.orElseSucceed((): ReadonlyArray<Delivery> => [])
        )
        yield* Ref.update(inFlight, (n) => n + claimed.length)
        for (const delivery of claimed) yield* FiberSet.run(fibers, dispatchOne(delivery))
        return claimed.length === free
      })
    )

    const sleepMs = Effect.gen(function* () {
      const next = yield* Effect.orElseSucceed(deliveries.nextDueAt, () => Option.none<number>())
      if (Option.isNone(next)) return options.pollIntervalMs
      const now = yield* Clock.currentTimeMillis
      return Math.min(options.pollIntervalMs, Math.max(MIN_SLEEP_MS, next.value - now))
    })

    yield* Effect.forever(
      Effect.gen(function* () {
        const full = yield* fill
        // Every slot busy: more may be due, look again as soon as one frees (not before).
        if (full)
          yield* Effect.race(Queue.take(slotFreed), Effect.sleep(Duration.millis(options.pollIntervalMs)))
        else {
          // Asked before the race, not inside it: interrupting a query makes @effect/sql-pg
          // send pg_cancel_backend, which can hit the next statement on that connection.
          const ms = yield* sleepMs
          yield* Effect.race(
            Effect.race(wakeups.next, Queue.take(slotFreed)),
            Effect.sleep(Duration.millis(ms))
          )
        }
      })
    ).pipe(
      Effect.onInterrupt(() =>
        Effect.flatMap(Ref.get(inFlight), (attempts) =>
          Effect.logInfo({
            message: "dispatcher stopping: finishing the attempts it claimed",
            inFlight: attempts
          })
        )
      )
    )
  }).pipe(
    Effect.scoped,
    // After the scope: every claimed attempt has finished by now.
    Effect.onInterrupt(() => Effect.logInfo("dispatcher stopped"))
  )
