import { Layer } from "effect"
import { type AccessSettings, makeAccessLayer } from "./access/access.js"
import { IdempotencyLive } from "./access/idempotency.js"
import { ProvisioningLive } from "./access/provisioning.js"
import { IntakeBotsLive } from "./submissions/intake-bots.js"
import { SubmissionsLive } from "./submissions/submissions.js"
import { WebhooksLive } from "./webhooks/webhooks.js"

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
