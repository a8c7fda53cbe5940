/**
 * What /readyz asks: every backing service the runtime was configured with (decisions.md
 * section 9: the database, and Redis when configured). A runtime without the service
 * (the embedded one) is always ready.
 */
import { Context, Effect, Layer } from "effect"

/** Each check answers whether its service answers; it must not fail and should be quick. */
export type ReadinessChecks = Readonly<Record<string, Effect.Effect<boolean>>>

export class Readiness extends Context.Tag("@intake/server/Readiness")<
  Readiness,
  {
    /** Every check's answer, by name; the checks run together, each bounded by `timeoutMs`. */
    readonly check: Effect.Effect<Readonly<Record<string, boolean>>>
  }
>() {}

export const readinessOf = (checks: ReadinessChecks, timeoutMs = 2_000): Readiness["Type"] => ({
  check: Effect.all(
    Object.fromEntries(
      Object.entries(checks).map(([name, check]) => [
        name,
        check.pipe(
          Effect.timeoutTo({ duration: timeoutMs, onSuccess: (ready) => ready, onTimeout: () => false }),
          Effect.catchAllCause(() => Effect.succeed(false))
        )
      ])
    ),
    { concurrency: "unbounded" }
  )
})

export const makeReadiness = (checks: ReadinessChecks, timeoutMs = 2_000) =>
  Layer.succeed(Readiness, readinessOf(checks, timeoutMs))
