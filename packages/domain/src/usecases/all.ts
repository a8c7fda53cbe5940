import { Layer } from "effect"
import { AccessLive } from "./access.js"
import { IdempotencyLive } from "./idempotency.js"
import { IntakeBotsLive } from "./intake-bots.js"
import { ProvisioningLive } from "./provisioning.js"
import { SubmissionsLive } from "./submissions.js"
import { WebhooksLive } from "./webhooks.js"

/** Every use case, over whatever adapters the composition root provides. */
export const UseCasesLive = Layer.mergeAll(
  AccessLive,
  ProvisioningLive,
  IntakeBotsLive,
  SubmissionsLive,
  WebhooksLive,
  IdempotencyLive
)
