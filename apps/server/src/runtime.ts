/**
 * The embedded runtime: every use case over the in-memory adapters (one MemoryDatabase),
 * with the webhook settings of the configuration. Postgres and Redis runtimes come with
 * later work.
 */
import { UseCasesLive, WebhookSettings } from "@intake/domain"
import { MemoryPortsLive } from "@intake/memory"
import { Layer } from "effect"

export interface RuntimeOptions {
  readonly webhookAllowPrivateNetworks: boolean
}

export const embeddedRuntime = (options: RuntimeOptions) =>
  UseCasesLive.pipe(
    Layer.provideMerge(
      Layer.merge(
        MemoryPortsLive,
        WebhookSettings.layer({ allowPrivateNetworks: options.webhookAllowPrivateNetworks })
      )
    )
  )
