/** The operator interface (docs/rules.md, Operator API), bound to the use cases. */

import * as Api from "@intake/api"
import {
  DateTimes,
  IntakeBots,
  invalid,
  makeApiKeyId,
  makeIntakeBotId,
  makeSubmissionId,
  makeWorkspaceId,
  Provisioning,
  Submissions
} from "@intake/domain/internal"
import { Effect } from "effect"
import { type Handlers, routesOf } from "./routes.js"

const admin = { idempotent: false }

/** Copies the keys that are present, so `exactOptionalPropertyTypes` inputs stay exact. */
const present = <T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>
  }

const expiry = (text: string | null | undefined) => {
  if (text === undefined || text === null) return Effect.succeed(text)
  const millis = DateTimes.parseDateTime(text)
  return millis !== undefined
    ? Effect.succeed(millis)
    : Effect.fail(invalid([{ path: "expires_at", message: Api.DATE_TIME_MESSAGE }]))
}

/** The bot fields both the create and the update body may carry (update: all optional). */
const botFields = (payload: Partial<typeof Api.CreateIntakeBotBody.Type>) =>
  present({
    name: payload.name,
    description: payload.description,
    status: payload.status,
    schema: payload.schema
  })

export type AdminServices = Provisioning | IntakeBots | Submissions

export const adminHandlers: Handlers<typeof Api.AdminApi, AdminServices> = {
  createWorkspace: {
    handle: ({ payload }) =>
      Effect.map(
        Effect.flatMap(Provisioning, (p) =>
          p.createWorkspace(
            present({
              name: payload.name,
              plan: payload.plan,
              monthlySubmissionQuota: payload.monthly_submission_quota
            })
          )
        ),
        (workspace) => ({ workspace: Api.workspaceToWire(workspace) })
      ),
    options: admin
  },
  updateWorkspace: {
    handle: ({ path, payload }) =>
      Effect.map(
        Effect.flatMap(Provisioning, (p) =>
          p.updateWorkspace(
            makeWorkspaceId(path.id),
            present({
              plan: payload.plan,
              status: payload.status,
              monthlySubmissionQuota: payload.monthly_submission_quota,
              rateLimitPerMinute: payload.rate_limit_per_minute
            })
          )
        ),
        (workspace) => ({ workspace: Api.workspaceToWire(workspace) })
      ),
    options: admin
  },
  createApiKey: {
    handle: ({ path, payload }) =>
      Effect.flatMap(expiry(payload.expires_at), (expiresAt) =>
        Effect.map(
          Effect.flatMap(Provisioning, (p) =>
            p.createApiKey(
              makeWorkspaceId(path.id),
              present({ scopes: payload.scopes, name: payload.name, expiresAt })
            )
          ),
          (issued) => ({ api_key: Api.issuedApiKeyToWire(issued) })
        )
      ),
    options: admin
  },
  getApiKey: {
    handle: ({ path }) =>
      Effect.map(
        Effect.flatMap(Provisioning, (p) => p.getApiKey(makeApiKeyId(path.id))),
        (key) => ({ api_key: Api.apiKeyToWire(key) })
      ),
    options: admin
  },
  revokeApiKey: {
    handle: ({ path }) =>
      Effect.map(
        Effect.flatMap(Provisioning, (p) => p.revokeApiKey(makeApiKeyId(path.id))),
        (key) => ({ api_key: Api.apiKeyToWire(key) })
      ),
    options: admin
  },
  createIntakeBot: {
    handle: ({ path, payload }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.create(makeWorkspaceId(path.id), botFields(payload))),
        (bot) => ({ intake_bot: Api.intakeBotToWire(bot) })
      ),
    options: admin
  },
  updateIntakeBot: {
    handle: ({ path, payload }) =>
      Effect.map(
        Effect.flatMap(IntakeBots, (bots) => bots.update(makeIntakeBotId(path.id), botFields(payload))),
        (bot) => ({ intake_bot: Api.intakeBotToWire(bot) })
      ),
    options: admin
  },
  adminCreateSubmission: {
    handle: ({ path, payload }) =>
      Effect.map(
        Effect.flatMap(Submissions, (submissions) =>
          submissions.createForBot(
            makeIntakeBotId(path.id),
            present({
              data: payload.data,
              status: payload.status,
              isTest: payload.is_test,
              messages: payload.messages
            })
          )
        ),
        (submission) => ({ submission: Api.submissionToWire(submission) })
      ),
    options: admin
  },
  deleteSubmission: {
    handle: ({ path }) =>
      Effect.as(
        Effect.flatMap(Submissions, (submissions) => submissions.remove(makeSubmissionId(path.id))),
        { id: path.id, deleted: true as const }
      ),
    options: admin
  }
}

/** The operator interface's route table: every endpoint of AdminApi with its handler. */
export const adminRoutes = routesOf(Api.AdminApi, adminHandlers)
