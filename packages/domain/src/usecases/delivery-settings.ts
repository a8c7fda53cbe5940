/**
 * Settings of the delivery engine, supplied by the composition root from its
 * configuration (WEBHOOK_RETRY_SCHEDULE, WEBHOOK_DISABLE_AFTER, WEBHOOK_RETENTION). A Context.Reference:
 * a runtime that provides nothing gets the defaults of docs/rules.md, Webhooks and deliveries.
 */
import { Context, Either, Layer } from "effect"
import { DEFAULT_ISOLATION, type IsolationPolicy } from "../policies/delivery-isolation.js"
import {
  DEFAULT_DISABLE_AFTER,
  DEFAULT_RETENTION,
  DEFAULT_RETRY_SCHEDULE,
  parseDuration,
  parseRetrySchedule
} from "../policies/retry-schedule.js"

export interface DeliverySettingsValues {
  /** Delays before the 2nd, 3rd, … attempt, in milliseconds. */
  readonly retrySchedule: ReadonlyArray<number>
  /** An unbroken failure streak this long disables the endpoint. */
  readonly disableAfterMs: number
  /**
   * How long a claimed attempt stays with its dispatcher: well above the 10 s an attempt
   * may take, so only a dispatcher that died loses its claims.
   */
  readonly leaseMs: number
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
  leaseMs: 60_000,
  isolation: DEFAULT_ISOLATION,
  retentionMs: Either.getOrThrow(parseDuration(DEFAULT_RETENTION))
})

export class DeliverySettings extends Context.Reference<DeliverySettings>()("@intake/DeliverySettings", {
  defaultValue: defaults
}) {
  static readonly layer = (values: Partial<DeliverySettingsValues>): Layer.Layer<never> =>
    Layer.succeed(DeliverySettings, { ...defaults(), ...values })
}
