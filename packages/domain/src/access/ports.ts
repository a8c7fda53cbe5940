/**
 * The ports of access (docs/rules.md, API keys): workspaces and API keys, the
 * idempotency records, the rate limiter and the invalidation of cached keys. The rules of
 * every port (failures, units of work) are in shared/ports.ts.
 */
import { Context, Data, type Effect, type Option, type Scope } from "effect"
import type { IdempotencyConflict, PlanLimitExceeded } from "../shared/errors.js"
import type { ApiKeyId, IntakeBotId, WorkspaceId } from "../shared/ids.js"
import type { ApiKey, EpochMillis, Workspace } from "../shared/models.js"
import type { Stored } from "../shared/stored.js"

// ---------------------------------------------------------------- workspaces and API keys

export class WorkspaceRepository extends Context.Tag("@intake/WorkspaceRepository")<
  WorkspaceRepository,
  {
    readonly insert: (workspace: Workspace) => Stored<void>
    readonly update: (workspace: Workspace) => Stored<void>
    readonly findById: (id: WorkspaceId) => Stored<Option.Option<Workspace>>
  }
>() {}

export class ApiKeyRepository extends Context.Tag("@intake/ApiKeyRepository")<
  ApiKeyRepository,
  {
    /**
     * Inserts the key unless the workspace already has `max` usable keys (not revoked,
     * not expired at `now`); atomic with respect to concurrent inserts.
     */
    readonly insertWithinCap: (key: ApiKey, max: number, now: EpochMillis) => Stored<void, PlanLimitExceeded>
    readonly findByHash: (keyHash: string) => Stored<Option.Option<ApiKey>>
    readonly findById: (id: ApiKeyId) => Stored<Option.Option<ApiKey>>
    /** Sets revoked_at unless already set; answers the key as stored afterwards. */
    readonly revoke: (id: ApiKeyId, at: EpochMillis) => Stored<Option.Option<ApiKey>>
    /** Writes last_used_at = at only when it is null or at most `at - minIntervalMs`; true when written. */
    readonly touchLastUsed: (id: ApiKeyId, at: EpochMillis, minIntervalMs: number) => Stored<boolean>
  }
>() {}

// ---------------------------------------------------------------- idempotency

export interface IdempotencyScope {
  readonly apiKeyId: ApiKeyId
  readonly key: string
}

/**
 * `IdempotencyStore.complete` found an unexpired record it may not replace: another unit of
 * work stored one after this one's claim read. Never an answer: the unit of work is rolled
 * back and the key claimed again (access/idempotency.ts).
 */
export class IdempotencyRecordExists extends Data.TaggedError("IdempotencyRecordExists") {}

/**
 * `IdempotencyStore.claimFresh` found the scope held by another unit of work or a record
 * stored for it. Never an answer: the unit of work is rolled back and `claim` tells which
 * (access/idempotency.ts).
 */
export class IdempotencyClaimNotFresh extends Data.TaggedError("IdempotencyClaimNotFresh") {}

/** A finished operation's answer as the client saw it, replayed verbatim. */
export interface StoredResponse {
  readonly status: number
  readonly body: unknown
}

export type IdempotencyClaim =
  | { readonly _tag: "Fresh" }
  | { readonly _tag: "Replay"; readonly response: StoredResponse }

export class IdempotencyStore extends Context.Tag("@intake/IdempotencyStore")<
  IdempotencyStore,
  {
    /**
     * Called inside the unit of work that performs the operation. Claims the scope for the
     * rest of that unit of work: fails with idempotency_conflict when another unit of work
     * holds it (in flight) or when an unexpired record has another fingerprint; answers
     * Replay when an unexpired record has the same fingerprint. A record stored by a unit
     * of work that ends while the claim runs may go unseen (Fresh): `complete` tells.
     */
    readonly claim: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis
    ) => Stored<IdempotencyClaim, IdempotencyConflict>
    /**
     * Claims the scope as `claim` does when `claim` would answer Fresh, and answers nothing.
     * Otherwise (the scope held, or an unexpired record stored for it, whatever its
     * fingerprint) it claims nothing and fails with IdempotencyClaimNotFresh. A store may
     * send it with the unit of work's next statement (PostgreSQL: docs/performance.md, "Round
     * trips of a create"): that failure may then come from that statement's step, or from
     * the unit of work's end.
     */
    readonly claimFresh: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis
    ) => Stored<void, IdempotencyClaimNotFresh>
    /**
     * For an operation that must not run inside a unit of work (it calls out): called in a
     * unit of work of its own, answers as `claim` does, and when Fresh records the scope as
     * reserved (in flight) until `until`, committed with that unit of work. `claim` and
     * `reserve` answer idempotency_conflict for a reserved scope until it is completed,
     * released, or its reservation runs out (a process that died mid-operation).
     */
    readonly reserve: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis,
      until: EpochMillis
    ) => Stored<IdempotencyClaim, IdempotencyConflict>
    /** Drops the reservation of `scope` for `fingerprint` (the operation stored nothing); a completed record stays. */
    readonly release: (scope: IdempotencyScope, fingerprint: string) => Stored<void>
    /**
     * Stores the response in the same unit of work as the claim (or after a reservation of
     * the same fingerprint, replacing it), unless another record that has not expired at
     * `createdAt` is stored already (another unit of work stored one after this one's claim
     * read): then it stores nothing and fails with IdempotencyRecordExists. A store may send
     * it with the unit of work's next statement (PostgreSQL: docs/performance.md, "Round trips
     * of a create"): that failure may then come from that statement's step, or from the
     * unit of work's end.
     */
    readonly complete: (
      scope: IdempotencyScope,
      fingerprint: string,
      response: StoredResponse,
      createdAt: EpochMillis,
      expiresAt: EpochMillis
    ) => Stored<void, IdempotencyRecordExists>
    /** Deletes records whose expiry is at or before `now`; answers how many. */
    readonly purgeExpired: (now: EpochMillis) => Stored<number>
  }
>() {}

// ---------------------------------------------------------------- rate limiting

/** What a sliding-window check decided, and what the rate-limit headers need. */
export interface RateLimitDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Epoch ms at which the oldest request in the window leaves it (now when the window is empty). */
  readonly resetAt: EpochMillis
  /** Whole seconds until a request would be admitted, at least 1; 0 when allowed. */
  readonly retryAfterSeconds: number
}

export class RateLimiter extends Context.Tag("@intake/RateLimiter")<
  RateLimiter,
  {
    /**
     * Counts one request for `bucket` if fewer than `limit` were admitted in the last
     * `windowMs`; refused requests are not counted. Exact: no span of `windowMs` ever
     * admits more than `limit`. Answers within `timeoutMs` (on the Clock) or fails with
     * StorageUnavailable: the adapter bounds its own wait, which costs it a timer where a
     * race around it would cost the caller two fibers per request.
     */
    readonly hit: (
      bucket: string,
      limit: number,
      windowMs: number,
      timeoutMs: number
    ) => Stored<RateLimitDecision>
    /**
     * What `hit` would answer now, counting nothing: `allowed` when fewer than `limit` were
     * admitted in the last `windowMs`, `remaining` the requests that still would be. Bounded
     * by `timeoutMs` as `hit` is.
     */
    readonly peek: (
      bucket: string,
      limit: number,
      windowMs: number,
      timeoutMs: number
    ) => Stored<RateLimitDecision>
  }
>() {}

// ---------------------------------------------------------------- access cache invalidation

/** A change that makes cached data stale: authentication's, or a cached bot. */
export type AccessInvalidationEvent =
  /** The key with this hash changed (revoked). */
  | { readonly _tag: "ApiKeyChanged"; readonly keyHash: string }
  /** The workspace changed (plan, status, overrides): every cached key of it is stale. */
  | { readonly _tag: "WorkspaceChanged"; readonly workspaceId: WorkspaceId }
  /** The bot changed (name, description, status, schema): its cached copy is stale. */
  | { readonly _tag: "IntakeBotChanged"; readonly intakeBotId: IntakeBotId }

/**
 * Tells every instance's authentication cache to drop stale entries. `publish` delivers to
 * this instance's subscribers before it returns (so a change is effective here at once)
 * and to other instances' subscribers as soon as the transport allows. It never fails: a
 * lost message only means other instances notice at the cache's TTL (at most 60 s).
 */
export class AccessInvalidation extends Context.Tag("@intake/AccessInvalidation")<
  AccessInvalidation,
  {
    readonly publish: (event: AccessInvalidationEvent) => Effect.Effect<void>
    /** Registers `handler` for events from this and other instances, until the scope closes. */
    readonly subscribe: (
      handler: (event: AccessInvalidationEvent) => Effect.Effect<void>
    ) => Effect.Effect<void, never, Scope.Scope>
  }
>() {}
