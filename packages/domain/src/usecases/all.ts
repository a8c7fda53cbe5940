import { Layer } from "effect"
import { type AccessSettings, makeAccessLayer } from "./access.js"
import { IdempotencyLive } from "./idempotency.js"
import { IntakeBotsLive } from "./intake-bots.js"
import { ProvisioningLive } from "./provisioning.js"
import { SubmissionsLive } from "./submissions.js"
import { WebhooksLive } from "./webhooks.js"

/** Every use case, over whatever adapters the composition root provides; Access with `access` settings. */
export const makeUseCasesLayer = (access: Partial<AccessSettings> = {}) =>
  Layer.mergeAll(
    makeAccessLayer(access),
    ProvisioningLive,
    IntakeBotsLive,
    SubmissionsLive,
    WebhooksLive,
    IdempotencyLive
  )

/** Every use case, over whatever adapters the composition root provides. */
export const UseCasesLive = makeUseCasesLayer()
