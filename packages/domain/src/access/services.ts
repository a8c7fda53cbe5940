/**
 * The use cases of access: authentication, provisioning and idempotent requests, as
 * services the adapters and the HTTP layer call. Their layers live beside this file; the
 * HTTP layer depends only on these shapes.
 */
import { Context, type Effect, type Redacted } from "effect"
import type {
  AuthenticationRequired,
  FeatureNotAvailable,
  IdempotencyConflict,
  InsufficientScopes,
  PlanLimitExceeded,
  RateLimitExceeded,
  ResourceNotFound,
  StorageUnavailable,
  ValidationFailed,
  WorkspaceArchived
} from "../shared/errors.js"
import type { ApiKeyId, WorkspaceId } from "../shared/ids.js"
import type { ApiKey, EpochMillis, Plan, Scope, Workspace, WorkspaceStatus } from "../shared/models.js"
import type { Fails } from "../shared/stored.js"
import type { RateLimitDecision, StoredResponse } from "./ports.js"

/** Who is calling: a usable key and its workspace, checked for archive and plan. */
export interface Principal {
  readonly apiKey: ApiKey
  readonly workspace: Workspace
}

// ---------------------------------------------------------------- access

export class Access extends Context.Tag("@intake/Access")<
  Access,
  {
    /**
     * Checks the Authorization header in the order of docs/rules.md, Checks in order: the key
     * (401), then an archived workspace, then a plan without API access (403). Records
     * last_used_at at most once a minute.
     */
    readonly authenticate: (
      authorization: string | undefined
    ) => Effect.Effect<Principal, Fails<AuthenticationRequired | WorkspaceArchived | FeatureNotAvailable>>
    /**
     * The operator token of /admin (`Authorization: Bearer <token>`, compared in constant
     * time), with failed tries limited per client address: past
     * OPERATOR_AUTH_FAILURES_PER_MINUTE in a minute, 429 for every request from it, the
     * right token included. Fails open like the other limits.
     */
    readonly authorizeOperator: (
      authorization: string | undefined,
      token: Redacted.Redacted,
      clientIp: string
    ) => Effect.Effect<void, AuthenticationRequired | RateLimitExceeded>
    /** The key's sliding window (plan limit or the workspace's override). Fails open. */
    readonly limitKey: (principal: Principal) => Effect.Effect<RateLimitDecision>
    /** The per-client-IP window for requests without a valid key (100 per minute). Fails open. */
    readonly limitAnonymous: (clientIp: string) => Effect.Effect<RateLimitDecision>
    /**
     * That window as it stands, counting nothing: the rate-limit headers of an answer given
     * before the request could be authenticated (a malformed request, one shed by an
     * overloaded server). Fails open.
     */
    readonly peekAnonymous: (clientIp: string) => Effect.Effect<RateLimitDecision>
    readonly requireScope: (principal: Principal, scope: Scope) => Effect.Effect<void, InsufficientScopes>
    /**
     * Whether the limits are off for now because the limiter failed (its last answer was a
     * failure, or its cool-down runs): what /readyz reports (docs/rules.md, Running).
     */
    readonly limiterFailingOpen: Effect.Effect<boolean>
    /** How many requests were let through because the limiter failed, since start (a metric). */
    readonly limiterFailedOpen: Effect.Effect<number>
  }
>() {}

// ---------------------------------------------------------------- operator interface

export interface NewWorkspace {
  readonly name: string
  readonly plan: Plan
  readonly monthlySubmissionQuota?: number | null
}

export interface WorkspaceChanges {
  readonly plan?: Plan
  readonly status?: WorkspaceStatus
  readonly monthlySubmissionQuota?: number | null
  readonly rateLimitPerMinute?: number | null
}

export interface NewApiKey {
  readonly scopes: ReadonlyArray<Scope>
  readonly name?: string | null
  readonly expiresAt?: EpochMillis | null
}

/** A created key: `key` is the full secret, shown this once and never again. */
export interface IssuedApiKey {
  readonly apiKey: ApiKey
  readonly key: string
}

export class Provisioning extends Context.Tag("@intake/Provisioning")<
  Provisioning,
  {
    readonly createWorkspace: (input: NewWorkspace) => Effect.Effect<Workspace, Fails<ValidationFailed>>
    readonly updateWorkspace: (
      id: WorkspaceId,
      changes: WorkspaceChanges
    ) => Effect.Effect<Workspace, Fails<ResourceNotFound | ValidationFailed>>
    readonly createApiKey: (
      workspaceId: WorkspaceId,
      input: NewApiKey
    ) => Effect.Effect<IssuedApiKey, Fails<ResourceNotFound | ValidationFailed | PlanLimitExceeded>>
    readonly getApiKey: (id: ApiKeyId) => Effect.Effect<ApiKey, Fails<ResourceNotFound>>
    readonly revokeApiKey: (id: ApiKeyId) => Effect.Effect<ApiKey, Fails<ResourceNotFound>>
  }
>() {}

// ---------------------------------------------------------------- idempotency

export interface IdempotentRequest {
  readonly apiKeyId: ApiKeyId
  /** The Idempotency-Key header, already checked (1 to 255 printable ASCII characters). */
  readonly key: string
  /** From `Idempotency.fingerprint(method, path, body)`. */
  readonly fingerprint: string
}

export type IdempotentOutcome<A> =
  | { readonly _tag: "Fresh"; readonly value: A }
  | { readonly _tag: "Replayed"; readonly response: StoredResponse }

export interface IdempotentResponses<A, E> {
  /** The response a later replay returns for this success. */
  readonly onSuccess: (value: A) => StoredResponse
  /**
   * The response to store for a failure of the operation once it started (404, 409, 429
   * quota), or undefined to store nothing (validation failures, storage faults).
   */
  readonly onFailure: (error: E) => StoredResponse | undefined
}

export class Idempotency extends Context.Tag("@intake/Idempotency")<
  Idempotency,
  {
    /** Method, path and a hash of the parsed JSON body in a canonical form (key order ignored). */
    readonly fingerprint: (method: string, path: string, body: unknown) => string
    /**
     * Runs the operation under the key (docs/rules.md, Idempotency): the stored response and
     * the operation's writes commit together; a replay returns the stored response; a
     * key in flight or reused with another fingerprint fails with idempotency_conflict.
     */
    readonly run: <A, E, R>(
      request: IdempotentRequest,
      operation: Effect.Effect<A, E, R>,
      responses: IdempotentResponses<A, E>
    ) => Effect.Effect<IdempotentOutcome<A>, E | IdempotencyConflict | StorageUnavailable, R>
    /**
     * `run` for an operation that calls out (test and redeliver send a webhook, up to 10 s)
     * and so must not run inside a unit of work (docs/choices.md, Idempotency): the key is
     * reserved in a unit of work of its own (a duplicate meanwhile is idempotency_conflict),
     * the operation runs outside any and commits its own writes, and its response is stored
     * in a third. A failure that stores nothing releases the key.
     */
    readonly runOutsideTransaction: <A, E, R>(
      request: IdempotentRequest,
      operation: Effect.Effect<A, E, R>,
      responses: IdempotentResponses<A, E>
    ) => Effect.Effect<IdempotentOutcome<A>, E | IdempotencyConflict | StorageUnavailable, R>
  }
>() {}
