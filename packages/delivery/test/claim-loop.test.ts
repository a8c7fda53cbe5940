/**
 * The claim loop's waits, under TestClock: a claim that found nothing and left nothing due
 * waiting is not followed by another when one of its items finishes (docs/webhooks.md,
 * "After an empty claim"). With several dispatchers, the claims that find nothing are the ones another
 * dispatcher beat to the work; a claim after each freed slot doubled them.
 */
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Option, Queue } from "effect"
import { type Claimed, claimLoop } from "../src/claim-loop.js"

it.scoped("a claim that found nothing and left nothing waiting: a freed slot claims nothing more", () =>
  Effect.gen(function* () {
    const wakeups = yield* Queue.unbounded<void>()
    const finish = yield* Deferred.make<void>()
    const answers: Array<Claimed<string>> = [
      { items: ["first"], more: false },
      // Another dispatcher took what the wake-up was about.
      { items: [], more: false }
    ]
    let claims = 0
    let finished = 0
    yield* Effect.forkScoped(
      claimLoop<string>({
        claims: "items",
        slots: () => 4,
        claim: () =>
          Effect.sync(() => {
            claims++
            return answers.shift() ?? { items: [], more: false }
          }),
        run: () =>
          Effect.zipRight(
            Deferred.await(finish),
            Effect.sync(() => {
              finished++
            })
          ),
        nextDueAt: Effect.succeed(Option.none()),
        wakeup: Queue.take(wakeups),
        pollIntervalMs: 60_000
      })
    )
    const settle = Effect.repeatN(Effect.yieldNow(), 50)

    yield* settle
    expect(claims).toBe(1)
    yield* Queue.offer(wakeups, undefined)
    yield* settle
    expect(claims).toBe(2)

    // The first item finishes and frees its slot: nothing new is due, so no claim.
    yield* Deferred.succeed(finish, undefined)
    yield* settle
    expect(finished).toBe(1)
    expect(claims).toBe(2)

    // A wake-up still claims at once.
    yield* Queue.offer(wakeups, undefined)
    yield* settle
    expect(claims).toBe(3)
  })
)
