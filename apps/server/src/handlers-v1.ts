/**
 * API v1: the handler of each endpoint of `IntakeApi`, by the endpoint's name, bound to its
 * use case. Method, path, scope and schemas are the endpoint's own (packages/api).
 */

import * as Api from "@intake/api"
import {
  type Access,
  Deliveries,
  type Idempotency,
  type IntakeBot,
  IntakeBots,
  makeDeliveryId,
  makeIntakeBotId,
  makeSubmissionId,
  makeWebhookId,
  Submissions,
  Webhooks
} from "@intake/domain"
import { Clock, Effect } from "effect"
import { type Handlers, routesOf } from "./routes.js"

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

export const v1Handlers: Handlers<typeof Api.IntakeApi, V1Services> = {
  listIntakeBots: {
    handle: ({ principal, urlParams }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.list(principal.workspace.id, listQuery(urlParams))),
        (listed) => ({
          intake_bots: listed.items.map(Api.intakeBotListItemToWire),
          pagination: pagination(listed.nextCursor)
        })
      ),
    options: v1
  },
  getIntakeBot: {
    handle: ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.get(principal.workspace.id, makeIntakeBotId(path.id))),
        botAnswer
      ),
    options: { ...v1, answersRepeat: true }
  },
  listSubmissions: {
    handle: ({ principal, path, urlParams }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.list(principal.workspace.id, makeIntakeBotId(path.id), {
            ...listQuery(urlParams),
            createdAfter: urlParams.created_after ?? null,
            createdBefore: urlParams.created_before ?? null
          })
        ),
        (listed) =>
          Api.submissionListJson({
            items: listed.submissions.items,
            schema: listed.schema,
            pagination: pagination(listed.submissions.nextCursor)
          })
      ),
    options: v1
  },
  getSubmission: {
    handle: ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.get(
            principal.workspace.id,
            makeIntakeBotId(path.id),
            makeSubmissionId(path.submissionId)
          )
        ),
        (submission) => ({ submission: Api.submissionToWire(submission) })
      ),
    options: v1
  },
  createSubmission: {
    handle: ({ principal, path, payload, notes }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.create(principal.workspace.id, makeIntakeBotId(path.id), {
            data: payload.data,
            ...(payload.status === undefined ? {} : { status: payload.status }),
            ...(payload.is_test === undefined ? {} : { isTest: payload.is_test }),
            requestId: notes.requestId,
            ...(notes.traceParent === undefined ? {} : { traceParent: notes.traceParent })
          })
        ),
        (submission) => {
          notes.submissionId = submission.id
          notes.eventIds = submission.completedEventId === null ? [] : [submission.completedEventId]
          return { submission: Api.createdSubmissionToWire(submission) }
        }
      ),
    options: v1
  },
  listWebhooks: {
    handle: ({ principal, urlParams }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) => webhooks.list(principal.workspace.id, listQuery(urlParams))),
        Clock.currentTimeMillis,
        (listed, now) => ({
          webhooks: listed.items.map((webhook) => Api.webhookToWire(webhook, now)),
          pagination: pagination(listed.nextCursor)
        })
      ),
    options: v1
  },
  getWebhook: {
    handle: ({ principal, path }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) => webhooks.get(principal.workspace.id, makeWebhookId(path.id))),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookToWire(webhook, now) })
      ),
    options: v1
  },
  createWebhook: {
    handle: ({ principal, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.create(principal.workspace.id, {
            url: payload.url,
            events: payload.events,
            ...(payload.description === undefined ? {} : { description: payload.description }),
            ...(payload.intake_bot_ids === undefined
              ? {}
              : { intakeBotIds: payload.intake_bot_ids.map(makeIntakeBotId) }),
            ...(payload.rate_limit === undefined ? {} : { rateLimit: payload.rate_limit })
          })
        ),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookWithSecretToWire(webhook, now) })
      ),
    options: v1
  },
  updateWebhook: {
    handle: ({ principal, path, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.update(principal.workspace.id, makeWebhookId(path.id), {
            ...(payload.events === undefined ? {} : { events: payload.events }),
            ...(payload.description === undefined ? {} : { description: payload.description }),
            ...(payload.status === undefined ? {} : { status: payload.status }),
            ...(payload.intake_bot_ids === undefined
              ? {}
              : { intakeBotIds: payload.intake_bot_ids.map(makeIntakeBotId) }),
            ...(payload.rate_limit === undefined ? {} : { rateLimit: payload.rate_limit })
          })
        ),
        Clock.currentTimeMillis,
        (webhook, now) => ({ webhook: Api.webhookToWire(webhook, now) })
      ),
    options: v1
  },
  deleteWebhook: {
    handle: ({ principal, path }) =>
      Effect.as(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.remove(principal.workspace.id, makeWebhookId(path.id))
        ),
        { id: path.id, deleted: true as const }
      ),
    options: v1
  },
  rotateWebhookSecret: {
    handle: ({ principal, path, payload }) =>
      Effect.zipWith(
        Effect.flatMap(Webhooks, (webhooks) =>
          webhooks.rotateSecret(
            principal.workspace.id,
            makeWebhookId(path.id),
            payload.grace_period_seconds === undefined
              ? {}
              : { gracePeriodSeconds: payload.grace_period_seconds }
          )
        ),
        Clock.currentTimeMillis,
        // The new secret, shown this once (as by create); a replay with the same key answers it again.
        (webhook, now) => ({ webhook: Api.webhookWithSecretToWire(webhook, now) })
      ),
    options: { ...v1, optionalBody: true }
  },
  testWebhook: {
    handle: ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.test(principal.workspace.id, makeWebhookId(path.id))
        ),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    options: v1CallingOut
  },
  listDeliveries: {
    handle: ({ principal, path, urlParams }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.list(principal.workspace.id, makeWebhookId(path.id), {
            ...listQuery(urlParams),
            status: urlParams.status ?? null,
            eventType: urlParams.event_type ?? null,
            submissionId:
              urlParams.submission_id === undefined ? null : makeSubmissionId(urlParams.submission_id),
            createdAfter: urlParams.created_after ?? null,
            createdBefore: urlParams.created_before ?? null
          })
        ),
        (listed) => ({
          deliveries: listed.items.map(Api.deliveryToWire),
          pagination: pagination(listed.nextCursor)
        })
      ),
    options: v1
  },
  getDelivery: {
    handle: ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.get(principal.workspace.id, makeWebhookId(path.id), makeDeliveryId(path.deliveryId))
        ),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    options: v1
  },
  recoverWebhook: {
    handle: ({ principal, path, payload }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.recover(principal.workspace.id, makeWebhookId(path.id), {
            since: payload.since,
            until: payload.until ?? null
          })
        ),
        (recovery) => ({ recovery: Api.recoveryToWire(recovery) })
      ),
    options: v1
  },
  redeliver: {
    handle: ({ principal, path }) =>
      Effect.map(
        Effect.flatMap(Deliveries, (deliveries) =>
          deliveries.redeliver(
            principal.workspace.id,
            makeWebhookId(path.id),
            makeDeliveryId(path.deliveryId)
          )
        ),
        (delivery) => ({ delivery: Api.deliveryToWire(delivery) })
      ),
    options: v1CallingOut
  }
}

/** The v1 route table: every endpoint of IntakeApi with its handler. */
export const v1Routes = routesOf(Api.IntakeApi, v1Handlers)
