/**
 * Settings of the delivery engine, supplied by the composition root from its
 * configuration (WEBHOOK_RETRY_SCHEDULE, WEBHOOK_DISABLE_AFTER, WEBHOOK_RETENTION). A Context.Reference:
 * a runtime that provides nothing gets the defaults of docs/rules.md, Webhooks and deliveries.
 */
import { Context, Duration, Effect, Either, Layer, Schedule } from "effect"
import { DEFAULT_ISOLATION, type IsolationPolicy } from "./delivery-isolation.js"
import {
  DEFAULT_DISABLE_AFTER,
  DEFAULT_RETENTION,
  DEFAULT_RETRY_SCHEDULE,
  parseDuration,
  parseRetrySchedule
} from "./retry-schedule.js"

export interface DeliverySettingsValues {
  /** Delays before the 2nd, 3rd, … attempt, in milliseconds. */
  readonly retrySchedule: ReadonlyArray<number>
  /** An unbroken failure streak this long disables the endpoint. */
  readonly disableAfterMs: number
  /**
   * How long a claimed attempt stays with its dispatcher (WEBHOOK_LEASE, default 15 s):
   * above the time an attempt may take, so only a dispatcher that died or froze loses its
   * claims, and another takes them over that soon (docs/webhooks.md, "How the engine sends").
   */
  readonly leaseMs: number
  /** How long one attempt may take: the receiver's time limit (10 s). */
  readonly attemptTimeoutMs: number
  /**
   * Per-endpoint limits (WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_CIRCUIT_FAILURES,
   * WEBHOOK_CIRCUIT_COOLDOWN, WEBHOOK_CIRCUIT_COOLDOWN_MAX): docs/webhooks.md, "Isolation".
   */
  readonly isolation: IsolationPolicy
  /** Finished attempts and events older than this are purged (docs/webhooks.md, "Data kept"). */
  readonly retentionMs: number
}

const defaults = (): DeliverySettingsValues => ({
  retrySchedule: Either.getOrThrow(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)),
  disableAfterMs: Either.getOrThrow(parseDuration(DEFAULT_DISABLE_AFTER)),
  leaseMs: 15_000,
  attemptTimeoutMs: 10_000,
  isolation: DEFAULT_ISOLATION,
  retentionMs: Either.getOrThrow(parseDuration(DEFAULT_RETENTION))
})

/**
 * How long after its claim an attempt may still start: late enough that it ends (at most
 * `attemptTimeoutMs`) a second before its lease does, so an attempt is never still running
 * when another dispatcher takes it over. A lease too short for that (tests) gets half of it.
 */
export const sendWindowMs = (settings: Pick<DeliverySettingsValues, "leaseMs" | "attemptTimeoutMs">) => {
  const window = settings.leaseMs - settings.attemptTimeoutMs - 1_000
  return window > 0 ? window : settings.leaseMs / 2
}

export class DeliverySettings extends Context.Reference<DeliverySettings>()("@intake/DeliverySettings", {
  defaultValue: defaults
}) {
  static readonly layer = (values: Partial<DeliverySettingsValues>): Layer.Layer<never> =>
    Layer.succeed(DeliverySettings, { ...defaults(), ...values })
}

/**
 * How a claimed attempt rides out a database blip (docs/choices.md, Webhooks): its writes
 * are tried again after 0.1, 0.2, 0.4, 0.8, 1.6 and 3.2 s, so a blip of a few seconds
 * costs no lease (15 s) and no second send.
 */
export const STORE_RETRY = Schedule.exponential(Duration.millis(100)).pipe(
  Schedule.intersect(Schedule.recurs(6))
)

/** `write`, tried again on StorageUnavailable along STORE_RETRY. */
export const retriedOnStorage = <A, E extends { readonly _tag: string }, R>(write: Effect.Effect<A, E, R>) =>
  Effect.retry(write, { schedule: STORE_RETRY, while: (error) => error._tag === "StorageUnavailable" })
