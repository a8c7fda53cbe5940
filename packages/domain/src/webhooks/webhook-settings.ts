/**
 * Settings of the webhook use cases, supplied by the server from its configuration.
 * A Context.Reference: a runtime that provides nothing gets the safe defaults.
 */
import { Context, Layer } from "effect"

export interface WebhookSettingsValues {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: admit http and loopback/private receivers (development, tests). */
  readonly allowPrivateNetworks: boolean
}

export class WebhookSettings extends Context.Reference<WebhookSettings>()("@intake/WebhookSettings", {
  defaultValue: (): WebhookSettingsValues => ({ allowPrivateNetworks: false })
}) {
  static readonly layer = (values: WebhookSettingsValues): Layer.Layer<never> =>
    Layer.succeed(WebhookSettings, values)
}
