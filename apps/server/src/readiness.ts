/**
 * What /readyz reports beside the database (DatabaseState): the other backing services the
 * runtime was configured with, Redis when REDIS_URL is set. They are reported, not required:
 * only the database decides readiness (docs/rules.md, Running). A runtime without this
 * service has none.
 */
import { Context, Effect } from "effect"

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
