/**
 * Steps a unit of work runs last, right before it commits (docs/rules.md, Idempotency). A
 * create's last statement, the submission within the monthly quota, locks the workspace's
 * usage counter, which every concurrent create of that workspace waits on; inside an
 * idempotent POST it runs after the stored response, so the lock is held for the COMMIT
 * only (docs/performance.md, Round trips of a create). Where nothing takes last steps (no
 * Idempotency-Key, the share page), a step runs where it stands. Nothing runs in the unit
 * of work after its last steps, so a step may end it (UnitOfWork.commitWith).
 */
import { Context, Effect, type Exit, FiberRef } from "effect"

/**
 * The last steps of the unit of work an operation runs in: a service in the operation's
 * context, provided by the unit that takes them (access/idempotency.ts, `withLastSteps`)
 * and read by the use cases that leave a step for last (`lastInUnitOfWork`). Optional: an
 * operation run without it runs its steps where they stand.
 */
export class LastSteps extends Context.Tag("@intake/LastSteps")<
  LastSteps,
  { readonly add: (step: Effect.Effect<void, unknown>) => void }
>() {}

/** `step` now, or, inside a unit of work that takes last steps, queued to run just before it commits. */
export const lastInUnitOfWork = <E>(step: Effect.Effect<void, E>): Effect.Effect<void, E> =>
  Effect.contextWithEffect((context: Context.Context<never>) => {
    const last = Context.getOption(context, LastSteps)
    if (last._tag === "None") return step
    last.value.add(step)
    return Effect.void
  })

/**
 * `operation` with `lastSteps` in its context, then `after` with its exit. The context is
 * set and reset by hand rather than with Effect.provideService, whose acquire-release
 * costs about fifteen steps of the fiber on every create (docs/performance.md, The
 * request path); `after` runs on every exit, and an interrupted operation ends the
 * fiber's work, so the reset cannot be skipped where it matters.
 */
export const withLastSteps = <A, E, R, B, E2, R2>(
  operation: Effect.Effect<A, E, R>,
  lastSteps: LastSteps["Type"],
  after: (exit: Exit.Exit<A, E>) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E2, R | R2> =>
  Effect.flatMap(
    FiberRef.getAndUpdate(FiberRef.currentContext, (context) => Context.add(context, LastSteps, lastSteps)),
    (enclosing) =>
      Effect.flatMap(Effect.exit(operation), (exit) =>
        Effect.zipRight(FiberRef.set(FiberRef.currentContext, enclosing), after(exit))
      )
  )
