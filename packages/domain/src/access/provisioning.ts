/**
 * The operator's provisioning of workspaces and keys (docs/rules.md, Operator API). Every change
 * that affects authentication is published through AccessInvalidation after it commits,
 * so this instance's key cache forgets it at once and other instances soon.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { invalid, notFound, type ValidationIssue } from "../shared/errors.js"
import type { WorkspaceId } from "../shared/ids.js"
import { type ApiKey, Plan, type Workspace, WorkspaceStatus } from "../shared/models.js"
import { Crypto, Ids, UnitOfWork } from "../shared/ports.js"
import { generateApiKey } from "./api-key.js"
import { maxApiKeys } from "./plans.js"
import { AccessInvalidation, ApiKeyRepository, WorkspaceRepository } from "./ports.js"
import { scopeIssues } from "./scopes.js"
import { Provisioning, type WorkspaceChanges } from "./services.js"

export const MAX_WORKSPACE_NAME_LENGTH = 200
export const MAX_API_KEY_NAME_LENGTH = 200

const isOneOf = <A extends string>(literals: ReadonlyArray<A>, value: unknown): value is A =>
  typeof value === "string" && (literals as ReadonlyArray<string>).includes(value)

const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const nameIssues = (name: unknown, path: string, max: number): ReadonlyArray<ValidationIssue> =>
  typeof name !== "string"
    ? [{ path, message: "must be a string" }]
    : name.trim() === ""
      ? [{ path, message: "must not be empty" }]
      : name.length > max
        ? [{ path, message: `must be at most ${max} characters` }]
        : []

const planIssues = (plan: unknown): ReadonlyArray<ValidationIssue> =>
  isOneOf(Plan.literals, plan)
    ? []
    : [{ path: "plan", message: `must be one of ${Plan.literals.join(", ")}` }]

const quotaIssues = (quota: unknown): ReadonlyArray<ValidationIssue> =>
  quota === undefined || quota === null || isCount(quota)
    ? []
    : [{ path: "monthly_submission_quota", message: "must be a non-negative integer or null" }]

const rateLimitIssues = (rate: unknown): ReadonlyArray<ValidationIssue> =>
  rate === undefined || rate === null || (isCount(rate) && rate > 0)
    ? []
    : [{ path: "rate_limit_per_minute", message: "must be a positive integer or null" }]

const failOnIssues = (issues: ReadonlyArray<ValidationIssue>) =>
  issues.length === 0 ? Effect.void : Effect.fail(invalid(issues))

export const ProvisioningLive = Layer.effect(
  Provisioning,
  Effect.gen(function* () {
    const workspaces = yield* WorkspaceRepository
    const keys = yield* ApiKeyRepository
    const unitOfWork = yield* UnitOfWork
    const crypto = yield* Crypto
    const ids = yield* Ids
    const invalidation = yield* AccessInvalidation

    const findWorkspace = (id: WorkspaceId) =>
      Effect.flatMap(
        workspaces.findById(id),
        Option.match({
          onNone: () => Effect.fail(notFound("workspace")),
          onSome: Effect.succeed
        })
      )

    const applyChanges = (workspace: Workspace, changes: WorkspaceChanges, now: number): Workspace => ({
      ...workspace,
      ...(changes.plan === undefined ? {} : { plan: changes.plan }),
      ...(changes.status === undefined ? {} : { status: changes.status }),
      ...(changes.monthlySubmissionQuota === undefined
        ? {}
        : { monthlySubmissionQuota: changes.monthlySubmissionQuota }),
      ...(changes.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: changes.rateLimitPerMinute }),
      updatedAt: now
    })

    return {
      createWorkspace: (input) =>
        Effect.gen(function* () {
          yield* failOnIssues([
            ...nameIssues(input.name, "name", MAX_WORKSPACE_NAME_LENGTH),
            ...planIssues(input.plan),
            ...quotaIssues(input.monthlySubmissionQuota)
          ])
          const now = yield* Clock.currentTimeMillis
          const workspace: Workspace = {
            id: yield* ids.next("ws"),
            name: input.name,
            plan: input.plan,
            status: "active",
            monthlySubmissionQuota: input.monthlySubmissionQuota ?? null,
            rateLimitPerMinute: null,
            createdAt: now,
            updatedAt: now
          }
          yield* workspaces.insert(workspace)
          return workspace
        }),

      updateWorkspace: (id, changes) =>
        Effect.gen(function* () {
          yield* failOnIssues([
            ...(changes.plan === undefined ? [] : planIssues(changes.plan)),
            ...(changes.status === undefined || isOneOf(WorkspaceStatus.literals, changes.status)
              ? []
              : [{ path: "status", message: `must be one of ${WorkspaceStatus.literals.join(", ")}` }]),
            ...quotaIssues(changes.monthlySubmissionQuota),
            ...rateLimitIssues(changes.rateLimitPerMinute)
          ])
          const updated = yield* unitOfWork.transaction(
            Effect.gen(function* () {
              const now = yield* Clock.currentTimeMillis
              const next = applyChanges(yield* findWorkspace(id), changes, now)
              yield* workspaces.update(next)
              return next
            })
          )
          yield* invalidation.publish({ _tag: "WorkspaceChanged", workspaceId: id })
          return updated
        }),

      createApiKey: (workspaceId, input) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const scopes: ReadonlyArray<unknown> = Array.isArray(input.scopes) ? input.scopes : []
          yield* failOnIssues([
            ...(Array.isArray(input.scopes)
              ? scopeIssues(scopes)
              : [{ path: "scopes", message: "must be an array" }]),
            ...(input.name === undefined || input.name === null
              ? []
              : nameIssues(input.name, "name", MAX_API_KEY_NAME_LENGTH)),
            ...(input.expiresAt === undefined ||
            input.expiresAt === null ||
            (typeof input.expiresAt === "number" && input.expiresAt > now)
              ? []
              : [{ path: "expires_at", message: "must be in the future" }])
          ])
          const workspace = yield* findWorkspace(workspaceId)
          const key = generateApiKey(crypto.randomBytes)
          const apiKey: ApiKey = {
            id: yield* ids.next("key"),
            workspaceId,
            name: input.name ?? null,
            keyHash: crypto.sha256Hex(key),
            scopes: [...input.scopes],
            expiresAt: input.expiresAt ?? null,
            revokedAt: null,
            lastUsedAt: null,
            createdAt: now
          }
          yield* keys.insertWithinCap(apiKey, maxApiKeys(workspace.plan), now)
          return { apiKey, key }
        }),

      getApiKey: (id) =>
        Effect.flatMap(
          keys.findById(id),
          Option.match({
            onNone: () => Effect.fail(notFound("api_key")),
            onSome: Effect.succeed
          })
        ),

      revokeApiKey: (id) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const revoked = yield* keys.revoke(id, now)
          if (Option.isNone(revoked)) return yield* notFound("api_key")
          yield* invalidation.publish({ _tag: "ApiKeyChanged", keyHash: revoked.value.keyHash })
          return revoked.value
        })
    }
  })
)
