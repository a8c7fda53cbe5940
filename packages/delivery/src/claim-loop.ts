/**
 * The loop the dispatcher and the summary runner share: claim as many due items as there
 * are free slots, run each in a fiber of its own, then sleep until the earliest item is due
 * (at most `pollIntervalMs`), a wake-up comes or, when a limit left due items waiting, a slot
 * frees. With every slot busy it waits for a slot only: a wake-up or a look at the queue could
 * claim nothing. Claims are leased,
 * so any number of loops may share one store.
 *
 * Claiming and starting are uninterruptible: a stopping loop (its scope closing) never
 * drops an item it claimed but did not start. Each item's fiber inherits that; an item
 * that may be cut short makes that part interruptible itself.
 */
import { type Cause, Clock, Duration, Effect, FiberSet, Option, Queue, Ref, type Scope } from "effect"

export interface ClaimLoopOptions<A> {
  /** What is claimed, as the log lines name it ("due deliveries", "summary jobs"). */
  readonly claims: string
  /** How many items may run at once now (read before each claim). */
  readonly slots: () => number
  /**
   * Claims at most `free` due items; `more` tells whether due items were left waiting (a
   * limit stopped the claim), so that a freed slot is worth a look at the queue.
   */
  readonly claim: (free: number) => Effect.Effect<Claimed<A>, unknown>
  /** Runs one claimed item; its failures are its own to log (they are ignored here). */
  readonly run: (item: A) => Effect.Effect<unknown, unknown>
  /** When the earliest item not yet due will be. */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, unknown>
  /** Completes when new items were queued. */
  readonly wakeup: Effect.Effect<void>
  /** Longest sleep between two looks at the queue. */
  readonly pollIntervalMs: number
  /** Logged when the loop is interrupted, with the items still running. */
  readonly onStop?: (inFlight: number) => Effect.Effect<void>
}

export interface Claimed<A> {
  readonly items: ReadonlyArray<A>
  readonly more: boolean
}

/** Shortest sleep, so that a due item another loop holds does not make this one spin. */
const MIN_SLEEP_MS = 5

export const claimLoop = <A>(options: ClaimLoopOptions<A>): Effect.Effect<never, never, Scope.Scope> =>
  Effect.gen(function* () {
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const inFlight = yield* Ref.make(0)
    const slotFreed = yield* Queue.sliding<void>(1)

    // A store that stays down fails every poll: the first failure is logged with its cause,
    // the rest are not until claiming works again (DatabaseState logs the outage itself).
    let claimFailing = false
    const claimOutcome = (failed: boolean, cause?: Cause.Cause<unknown>) => {
      if (failed === claimFailing) return Effect.void
      claimFailing = failed
      return failed
        ? Effect.logWarning(
            `could not claim ${options.claims}; retrying at each poll, quietly until it works`,
            cause
          )
        : Effect.logInfo(`claiming ${options.claims} again`)
    }

    const start = (item: A) =>
      Effect.ignore(options.run(item)).pipe(
        Effect.ensuring(
          Effect.zipRight(
            Ref.update(inFlight, (n) => n - 1),
            Queue.offer(slotFreed, undefined)
          )
        )
      )

    /** Claims and starts as many as there are free slots; answers whether every slot is busy, and how many it claimed. */
    const fill = Effect.uninterruptible(
      Effect.gen(function* () {
        const free = options.slots() - (yield* Ref.get(inFlight))
        if (free <= 0) return { full: true, claimed: 0, more: true }
        const { items, more } = yield* options.claim(free).pipe(
          Effect.tap(() => claimOutcome(false)),
          Effect.tapErrorCause((cause) => claimOutcome(true, cause)),
          Effect.orElseSucceed((): Claimed<A> => ({ items: [], more: false }))
        )
        yield* Ref.update(inFlight, (n) => n + items.length)
        for (const item of items) yield* FiberSet.run(fibers, start(item))
        return { full: items.length === free, claimed: items.length, more }
      })
    )

    const sleepMs = Effect.gen(function* () {
      const next = yield* Effect.orElseSucceed(options.nextDueAt, () => Option.none<number>())
      if (Option.isNone(next)) return options.pollIntervalMs
      const now = yield* Clock.currentTimeMillis
      return Math.min(options.pollIntervalMs, Math.max(MIN_SLEEP_MS, next.value - now))
    })

    return yield* Effect.forever(
      Effect.gen(function* () {
        const { full, claimed, more } = yield* fill
        // Every slot busy: more may be due, look again as soon as one frees (not before).
        if (full)
          yield* Effect.race(Queue.take(slotFreed), Effect.sleep(Duration.millis(options.pollIntervalMs)))
        // It took all that was due: a freed slot brings nothing new, new items or the poll do.
        else if (claimed > 0 && !more)
          yield* Effect.race(options.wakeup, Effect.sleep(Duration.millis(options.pollIntervalMs)))
        // It found nothing and nothing due was left waiting (another claim took it, or none is
        // due): a freed slot brings nothing new either; a wake-up or the next due time does
        // (docs/webhooks.md, "After an empty claim"). The slot freed meanwhile is forgotten.
        else if (claimed === 0 && !more) {
          // Asked before the race, not inside it: interrupting a query makes @effect/sql-pg
          // send pg_cancel_backend, which can hit the next statement on that connection.
          const ms = yield* sleepMs
          yield* Queue.takeAll(slotFreed)
          yield* Effect.race(options.wakeup, Effect.sleep(Duration.millis(ms)))
        } else {
          // Due items were left waiting (a limit stopped the claim): a freed slot may take them.
          // The queue's walk for the next due time is spared while there is work
          // (docs/webhooks.md, "How the engine sends"): the items started free their slots soon.
          const ms = claimed === 0 ? yield* sleepMs : options.pollIntervalMs
          yield* Effect.race(
            Effect.race(options.wakeup, Queue.take(slotFreed)),
            Effect.sleep(Duration.millis(ms))
          )
        }
      })
    ).pipe(
      Effect.onInterrupt(() =>
        options.onStop === undefined ? Effect.void : Effect.flatMap(Ref.get(inFlight), options.onStop)
      )
    )
  })
