/** The scene of the delivery rules' tests: memory layers, a receiver double, a realistic wall time. */
import {
  Deliveries,
  IntakeBots,
  makeIntakeBotId,
  makeWebhookId,
  makeWorkspaceId,
  Submissions,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import {
  aWorkspace,
  deliveryRulesLayer,
  newIntakeBot,
  receiverDouble,
  requiredOnlyData
} from "@intake/testing"
import { Effect, TestClock } from "effect"

export const SECOND = 1_000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const RECEIVER = "https://hooks.example.com/intake"
/** Wall time: receivers refuse a signature whose timestamp is more than 5 minutes off theirs. */
export const NOW = Date.now()
export const NOW_ISO = new Date(NOW).toISOString()

/** The layer, its receiver double and its DNS table (a test may re-point a name while it runs). */
export const scene = (options: Parameters<typeof deliveryRulesLayer>[1] = {}) => {
  const receiver = receiverDouble()
  const addresses = { "hooks.example.com": ["93.184.216.34"], ...options.addresses }
  return { receiver, addresses, layer: deliveryRulesLayer(receiver.layer, { ...options, addresses }) }
}

/** A workspace with a bot, at a realistic wall time (receivers check the signature's timestamp). */
export const givenWorkspaceWithBot = Effect.gen(function* () {
  yield* TestClock.setTime(NOW)
  const workspace = aWorkspace()
  yield* (yield* WorkspaceRepository).insert(workspace)
  const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
  return { workspaceId: workspace.id, bot }
})

export const givenWebhook = (
  workspaceId: string,
  events: ReadonlyArray<string>,
  intakeBotIds: ReadonlyArray<string> = []
) =>
  Effect.flatMap(Webhooks, (webhooks) =>
    webhooks.create(makeWorkspaceId(workspaceId), {
      url: RECEIVER,
      events,
      intakeBotIds: intakeBotIds.map(makeIntakeBotId)
    })
  )

/** What one dispatcher does in one round: claim what is due and make every attempt. */
export const dispatchDue = Effect.gen(function* () {
  const deliveries = yield* Deliveries
  const claimed = yield* deliveries.claimDue(100, "rules")
  return yield* Effect.forEach(claimed, (delivery) => deliveries.dispatch(delivery, "rules"))
})

export const submit = (workspaceId: string, botId: string, email = "ada@example.com") =>
  Effect.flatMap(Submissions, (s) =>
    s.create(makeWorkspaceId(workspaceId), makeIntakeBotId(botId), { data: requiredOnlyData({ email }) })
  )

/** The endpoint's delivery log, newest first (up to 100). */
export const attemptsOf = (workspaceId: string, webhookId: string) =>
  Effect.map(
    Effect.flatMap(Deliveries, (d) =>
      d.list(makeWorkspaceId(workspaceId), makeWebhookId(webhookId), { limit: 100, cursor: null })
    ),
    (listed) => listed.items
  )

export const endpointOf = (workspaceId: string, webhookId: string) =>
  Effect.flatMap(Webhooks, (webhooks) => webhooks.get(makeWorkspaceId(workspaceId), makeWebhookId(webhookId)))
