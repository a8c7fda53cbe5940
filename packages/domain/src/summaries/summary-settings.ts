/**
 * Settings of the model summary (INTAKE_SUMMARIZER_WAIT, INTAKE_SUMMARIZER_TIMEOUT),
 * supplied by the composition root. A Context.Reference: a runtime that provides nothing
 * gets the defaults.
 */
import { Context, Layer } from "effect"

export interface SummarySettingsValues {
  /** How long submission.completed attempts wait for the model's summary before they go with the stored one. */
  readonly deliveryWaitMs: number
  /** The longest a model call may take. */
  readonly timeoutMs: number
  /** Delays before the 2nd, 3rd, … call for one submission; its length bounds the retries. */
  readonly retryDelaysMs: ReadonlyArray<number>
  /** How long a claimed job stays with its process: well above `timeoutMs`. */
  readonly leaseMs: number
}

const defaults = (): SummarySettingsValues => ({
  deliveryWaitMs: 10_000,
  timeoutMs: 10_000,
  retryDelaysMs: [30_000, 300_000],
  leaseMs: 60_000
})

export class SummarySettings extends Context.Reference<SummarySettings>()("@intake/SummarySettings", {
  defaultValue: defaults
}) {
  static readonly layer = (values: Partial<SummarySettingsValues>): Layer.Layer<never> => {
    const settings = { ...defaults(), ...values }
    // A lease shorter than a call would hand a job to a second process while the first still waits.
    return Layer.succeed(SummarySettings, {
      ...settings,
      leaseMs: Math.max(settings.leaseMs, settings.timeoutMs + 10_000)
    })
  }
}
