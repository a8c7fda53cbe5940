/** API v1: each served endpoint bound to its use case. */

import * as Api from "@intake/api"
import {
  type Access,
  Deliveries,
  type Idempotency,
  type IntakeBot,
  IntakeBots,
  Submissions,
  Webhooks
} from "@intake/domain"
import { Clock, Effect } from "effect"
import { type Route, serve } from "./routes.js"

const DEFAULT_LIMIT = 50

const listQuery = (params: {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}) => ({
  limit: params.limit ?? DEFAULT_LIMIT,
  cursor: params.cursor ?? null
})

const pagination = (nextCursor: string | null) => ({ has_more: nextCursor !== null, next_cursor: nextCursor })

const v1 = { idempotent: true }
/** Test and redeliver send at once: their idempotency keeps the send outside any transaction. */
const v1CallingOut = { idempotent: true, callsOut: true }

/**
 * One answer object per bot object: a bot served from the cache is the same object until it
 * changes, so serve() encodes and serializes its answer once.
 */
const botAnswers = new WeakMap<IntakeBot, { readonly intake_bot: Api.IntakeBotWire }>()
const botAnswer = (bot: IntakeBot) => {
  let answer = botAnswers.get(bot)
  if (answer === undefined) {
    answer = { intake_bot: Api.intakeBotToWire(bot) }
    botAnswers.set(bot, answer)
  }
  return answer
}

export type V1Services = Access | Idempotency | IntakeBots | Submissions | Webhooks | Deliveries

export const v1Routes: ReadonlyArray<Route<V1Services>> = [
  serve(
    Api.listIntakeBots,
    ({ principal, urlParams }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.list(principal.workspace.id, listQuery(urlParams))),
        (listed) => ({
          intake_bots: listed.items.map(Api.intakeBotListItemToWire),
          pagination: pagination(listed.nextCursor)
        })
      ),
    v1
  ),
  serve(
    Api.getIntakeBot,
    ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.get(principal.workspace.id, path.id)),
        botAnswer
      ),
    { ...v1, answersRepeat: true }
  ),
  serve(
    Api.listSubmissions,
    ({ principal, path, urlParams }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.list(principal.workspace.id, path.id, {
            ...listQuery(urlParams),
            createdAfter: urlParams.created_after ?? null,
            createdBefore: urlParams.created_before ?? null
          })
        ),
        (listed) => ({
          submissions: listed.submissions.items.map(Api.submissionListItemToWire),
          schema: listed.schema.map(Api.schemaFieldSummary),
          pagination: pagination(listed.submissions.nextCursor)
        })
      ),
    v1
  ),
  serve(
    Api.getSubmission,
    ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.get(principal.workspace.id, path.id, path.submissionId)
        ),
        (submission) => ({ submission: Api.submissionToWire(submission) })
      ),
    v1
  ),
  serve(
    Api.createSubmission,
    ({ principal, path, payload }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.create(principal.workspace.id, path.id, {
            data: payload.data,
            ...(payload.status === undefined ? {} : { status: payload.status }),
            ...(payload.is_test === undefined ? {} : { isTest: payload.is_test })
          })
        ),
        (submission) => ({ submission: Api.createdSubmissionToWire(submission) })
      ),
    v1
  ),
  serve(
    Api.listWebhooks,
    ({ principal, urlParams }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) => webhooks.list(principal.workspace.id, listQuery(urlParams))),
        Clock.currentTimeMillis,
        (listed, now) => ({
          webhooks: listed.items.map((webhook) => Api.webhookToWire(webhook, now)),
          pagination: pagination(listed.nextCursor)
        })
      ),
    v1
  ),
  serve(
    Api.getWebhook,
    ({ principal, path }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) => webhooks.get(principal.workspace.id, path.id)),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookToWire(webhook, now) })
      ),
    v1
  ),
  serve(
    Api.createWebhook,
    ({ principal, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.create(principal.workspace.id, {
            url: payload.url,
            events: payload.events,
            ...(payload.description === undefined ? {} : { description: payload.description }),
            ...(payload.intake_bot_ids === undefined ? {} : { intakeBotIds: payload.intake_bot_ids }),
            ...(payload.rate_limit === undefined ? {} : { rateLimit: payload.rate_limit })
          })
        ),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookWithSecretToWire(webhook, now) })
      ),
    v1
  ),
  serve(
    Api.updateWebhook,
    ({ principal, path, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.update(principal.workspace.id, path.id, {
            ...(payload.events === undefined ? {} : { events: payload.events }),
            ...(payload.description === undefined ? {} : { description: payload.description }),
            ...(payload.status === undefined ? {} : { status: payload.status }),
            ...(payload.intake_bot_ids === undefined ? {} : { intakeBotIds: payload.intake_bot_ids }),
            ...(payload.rate_limit === undefined ? {} : { rateLimit: payload.rate_limit })
          })
        ),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookToWire(webhook, now) })
      ),
    v1
  ),
  serve(
    Api.deleteWebhook,
    ({ principal, path }) =>
      Effect.as(
        Effect.flatMap(Webhooks, (webhooks) => webhooks.remove(principal.workspace.id, path.id)),
        { id: path.id, deleted: true as const }
      ),
    v1
  ),
  serve(
    Api.rotateWebhookSecret,
    ({ principal, path, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.rotateSecret(
            principal.workspace.id,
            path.id,
            payload.grace_period_seconds === undefined
              ? {}
              : { gracePeriodSeconds: payload.grace_period_seconds }
          )
        ),
        Clock.currentTimeMillis,
        // The new secret, shown this once (as by create); a replay with the same key answers it again.
        (webhook, now) => ({ webhook: Api.webhookWithSecretToWire(webhook, now) })
      ),
    { ...v1, optionalBody: true }
  ),
  serve(
    Api.testWebhook,
    ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) => deliveries.test(principal.workspace.id, path.id)),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    v1CallingOut
  ),
  serve(
    Api.listDeliveries,
    ({ principal, path, urlParams }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.list(principal.workspace.id, path.id, {
            ...listQuery(urlParams),
            status: urlParams.status ?? null,
            eventType: urlParams.event_type ?? null,
            submissionId: urlParams.submission_id ?? null,
            createdAfter: urlParams.created_after ?? null,
            createdBefore: urlParams.created_before ?? null
          })
        ),
        (listed) => ({
          deliveries: listed.items.map(Api.deliveryToWire),
          pagination: pagination(listed.nextCursor)
        })
      ),
    v1
  ),
  serve(
    Api.getDelivery,
    ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.get(principal.workspace.id, path.id, path.deliveryId)
        ),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    v1
  ),
  serve(
    Api.recoverWebhook,
    ({ principal, path, payload }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.recover(principal.workspace.id, path.id, {
            since: payload.since,
            until: payload.until ?? null
          })
        ),
        (recovery) => ({ recovery: Api.recoveryToWire(recovery) })
      ),
    v1
  ),
  serve(
    Api.redeliver,
    ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.redeliver(principal.workspace.id, path.id, path.deliveryId)
        ),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    v1CallingOut
  )
]
