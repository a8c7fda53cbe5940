/**
 * What /readyz reports beside the database (DatabaseState): the other backing services the
 * runtime was configured with, Redis when REDIS_URL is set. They are reported, not required:
 * only the database decides readiness (docs/rules.md, Running). A runtime without this
 * service has none.
 */
import { Context, Effect, Option } from "effect"

/** Each check answers whether its service answers; it must not fail and should be quick. */
export type ReadinessChecks = Readonly<Record<string, Effect.Effect<boolean>>>

/**
 * A service that answers but is configured wrong (docs/operations.md, Redis faults): what to
 * fix, and how many times it was seen. No address or key name: /readyz needs no key.
 */
export interface ServiceFault {
  readonly code: string
  readonly reason: string
  readonly count: number
}

/** Each service's recent configuration fault, if any; read from memory, so quick. */
export type FaultChecks = Readonly<Record<string, Effect.Effect<Option.Option<ServiceFault>>>>

export class Readiness extends Context.Tag("@intake/server/Readiness")<
  Readiness,
  {
    /** Every check's answer, by name; the checks run together, each bounded by `timeoutMs`. */
    readonly check: Effect.Effect<Readonly<Record<string, boolean>>>
    /** The services with a recent configuration fault, by name. */
    readonly faults: Effect.Effect<Readonly<Record<string, ServiceFault>>>
  }
>() {}

export const readinessOf = (
  checks: ReadinessChecks,
  timeoutMs = 2_000,
  faultChecks: FaultChecks = {}
): Readiness["Type"] => ({
  faults: Effect.map(
    Effect.all(faultChecks),
    (found) =>
      Object.fromEntries(
        Object.entries(found).flatMap(([name, fault]) =>
          Option.isSome(fault)
            ? [[name, { code: fault.value.code, reason: fault.value.reason, count: fault.value.count }]]
            : []
        )
      ) as Readonly<Record<string, ServiceFault>>
  ),
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
