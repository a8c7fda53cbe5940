/**
 * Steps a unit of work runs last, right before it commits (docs/rules.md, Idempotency). A
 * create's last statement, the submission within the monthly quota, locks the workspace's
 * usage counter, which every concurrent create of that workspace waits on; inside an
 * idempotent POST it runs after the stored response, so the lock is held for the COMMIT
 * only, not for one more round trip. Where nothing takes last steps (no Idempotency-Key,
 * the share page), a step runs where it stands. Nothing runs in the unit of work after its
 * last steps, so a step may end it (UnitOfWork.commitWith).
 */
import { Effect, FiberRef } from "effect"

export interface LastSteps {
  readonly add: (step: Effect.Effect<void, unknown>) => void
}

/**
 * The last steps of the unit of work the fiber runs, when it takes them. A fiber-local
 * value its taker sets and resets itself (idempotency.ts), not a service provided to the
 * operation: on every create that cost a region of about fifteen steps of the fiber
 * (docs/performance.md, The request path).
 */
export const CurrentLastSteps: FiberRef.FiberRef<LastSteps | undefined> = FiberRef.unsafeMake<
  LastSteps | undefined
>(undefined)

/** `step` now, or, inside a unit of work that takes last steps, queued to run just before it commits. */
export const lastInUnitOfWork = <E>(step: Effect.Effect<void, E>): Effect.Effect<void, E> =>
  Effect.flatMap(FiberRef.get(CurrentLastSteps), (last) => {
    if (last === undefined) return step
    last.add(step)
    return Effect.void
  })
