/**
 * The embedded runtime: every use case over the in-memory adapters (one MemoryDatabase),
 * with the webhook settings of the configuration, and the webhook dispatcher running
 * in-process. Postgres and Redis runtimes come with later work.
 */
import { UseCasesLive, WebhookSettings } from "@intake/domain"
import { MemoryPortsLive } from "@intake/memory"
import { deliveryEngine, dispatcherLayer } from "@intake/worker"
import { Layer } from "effect"

export interface RuntimeOptions {
  readonly webhookAllowPrivateNetworks: boolean
  /** WEBHOOK_RETRY_SCHEDULE in milliseconds; decisions.md's default when omitted. */
  readonly webhookRetrySchedule?: ReadonlyArray<number>
  /** WEBHOOK_DISABLE_AFTER in milliseconds; 5 days when omitted. */
  readonly webhookDisableAfterMs?: number
  /** The in-process dispatcher; on unless `false`. */
  readonly dispatcher?: false | { readonly concurrency?: number; readonly pollIntervalMs?: number }
}

export const embeddedRuntime = (options: RuntimeOptions) => {
  const ports = Layer.merge(
    MemoryPortsLive,
    WebhookSettings.layer({ allowPrivateNetworks: options.webhookAllowPrivateNetworks })
  )
  const useCases = Layer.merge(
    UseCasesLive,
    deliveryEngine({
      allowPrivateNetworks: options.webhookAllowPrivateNetworks,
      settings: {
        ...(options.webhookRetrySchedule === undefined
          ? {}
          : { retrySchedule: options.webhookRetrySchedule }),
        ...(options.webhookDisableAfterMs === undefined
          ? {}
          : { disableAfterMs: options.webhookDisableAfterMs })
      }
    })
  ).pipe(Layer.provideMerge(ports))
  if (options.dispatcher === false) return useCases
  return dispatcherLayer({
    concurrency: options.dispatcher?.concurrency ?? 32,
    pollIntervalMs: options.dispatcher?.pollIntervalMs ?? 1_000
  }).pipe(Layer.provideMerge(useCases))
}
