import { expect, layer } from "@effect/vitest"
import {
  type ApiKey,
  ApiKeyRepository,
  type EpochMillis,
  makeApiKeyId,
  makeWorkspaceId,
  type PlanLimitExceeded,
  type StorageUnavailable,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, Either, type Layer, Option } from "effect"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

const NOW: EpochMillis = 1_800_000_000_000
const MINUTE = 60_000

const aKeyRecord = (workspaceId: string, overrides: Partial<ApiKey> = {}): ApiKey => ({
  id: makeApiKeyId(uniqueId("key")),
  workspaceId: makeWorkspaceId(workspaceId),
  name: "ci",
  keyHash: `hash-${uniqueId("h")}`,
  scopes: ["read:submissions"],
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  createdAt: NOW - MINUTE,
  ...overrides
})

/** What a refusal tells the client; a storage failure shows up as its tag and fails the comparison. */
const refusalOf = (error: PlanLimitExceeded | StorageUnavailable) =>
  error._tag === "PlanLimitExceeded" ? error.details : error._tag

/** A fresh workspace in the store (keys reference it). */
const storedWorkspaceId = Effect.gen(function* () {
  const workspace = aWorkspace()
  yield* (yield* WorkspaceRepository).insert(workspace)
  return workspace.id
})

export const apiKeyRepositoryContract = (
  name: string,
  repositoryLayer: Layer.Layer<ApiKeyRepository | WorkspaceRepository>
) =>
  layer(checkedStores(repositoryLayer))(`ApiKeyRepository contract: ${name}`, (it) => {
    it.effect("finds an inserted key by id and by hash; unknown ones are none", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const key = aKeyRecord(yield* storedWorkspaceId, {
          scopes: ["read:submissions", "manage:webhooks"],
          expiresAt: NOW + MINUTE
        })
        yield* keys.insertWithinCap(key, 3, NOW)
        expect(yield* keys.findById(key.id)).toEqual(Option.some(key))
        expect(yield* keys.findByHash(key.keyHash)).toEqual(Option.some(key))
        expect(yield* keys.findById(makeApiKeyId(uniqueId("key")))).toEqual(Option.none())
        expect(yield* keys.findByHash("no-such-hash")).toEqual(Option.none())
      })
    )

    it.effect("insertWithinCap refuses the key over the cap with plan_limit_exceeded", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const workspaceId = yield* storedWorkspaceId
        yield* keys.insertWithinCap(aKeyRecord(workspaceId), 2, NOW)
        yield* keys.insertWithinCap(aKeyRecord(workspaceId), 2, NOW)
        const third = aKeyRecord(workspaceId)
        const error = yield* Effect.flip(keys.insertWithinCap(third, 2, NOW))
        expect(refusalOf(error)).toEqual({ resource: "api_keys", current: 2, max: 2 })
        expect(yield* keys.findById(third.id)).toEqual(Option.none())
        expect(yield* keys.findByHash(third.keyHash)).toEqual(Option.none())
      })
    )

    it.effect("a cap of 0 refuses every key", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const error = yield* Effect.flip(keys.insertWithinCap(aKeyRecord(yield* storedWorkspaceId), 0, NOW))
        expect(refusalOf(error)).toEqual({ resource: "api_keys", current: 0, max: 0 })
      })
    )

    it.effect("10 concurrent inserts with a cap of 3 insert exactly 3", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const workspaceId = yield* storedWorkspaceId
        const candidates = Array.from({ length: 10 }, () => aKeyRecord(workspaceId))
        const results = yield* Effect.all(
          candidates.map((key) => Effect.either(keys.insertWithinCap(key, 3, NOW))),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Either.isRight)).toHaveLength(3)
        const refusals = results.filter(Either.isLeft).map((result) => refusalOf(result.left))
        expect(refusals).toEqual(
          Array.from({ length: 7 }, () => ({ resource: "api_keys", current: 3, max: 3 }))
        )
        const stored = yield* Effect.forEach(candidates, (key) => keys.findById(key.id))
        expect(stored.filter(Option.isSome)).toHaveLength(3)
      })
    )

    it.effect("revoked keys and keys expired at `now` do not count toward the cap", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const workspaceId = yield* storedWorkspaceId
        const revoked = aKeyRecord(workspaceId)
        yield* keys.insertWithinCap(revoked, 2, NOW - MINUTE)
        yield* keys.revoke(revoked.id, NOW - 1)
        // Inserted while still valid; expired from NOW on.
        yield* keys.insertWithinCap(aKeyRecord(workspaceId, { expiresAt: NOW }), 2, NOW - MINUTE)
        yield* keys.insertWithinCap(aKeyRecord(workspaceId, { expiresAt: NOW + 1 }), 2, NOW)
        yield* keys.insertWithinCap(aKeyRecord(workspaceId), 2, NOW)
        const error = yield* Effect.flip(keys.insertWithinCap(aKeyRecord(workspaceId), 2, NOW))
        expect(refusalOf(error)).toEqual({ resource: "api_keys", current: 2, max: 2 })
      })
    )

    it.effect("keys of other workspaces do not count", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const crowded = yield* storedWorkspaceId
        const empty = yield* storedWorkspaceId
        yield* keys.insertWithinCap(aKeyRecord(crowded), 1, NOW)
        const own = aKeyRecord(empty)
        yield* keys.insertWithinCap(own, 1, NOW)
        expect(Option.isSome(yield* keys.findById(own.id))).toBe(true)
      })
    )

    it.effect("revoke sets revoked_at once; a second revoke keeps the first time", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const key = aKeyRecord(yield* storedWorkspaceId)
        yield* keys.insertWithinCap(key, 3, NOW)
        expect(yield* keys.revoke(key.id, NOW)).toEqual(Option.some({ ...key, revokedAt: NOW }))
        expect(yield* keys.revoke(key.id, NOW + MINUTE)).toEqual(Option.some({ ...key, revokedAt: NOW }))
        expect(yield* keys.findByHash(key.keyHash)).toEqual(Option.some({ ...key, revokedAt: NOW }))
        expect(yield* keys.revoke(makeApiKeyId(uniqueId("key")), NOW)).toEqual(Option.none())
      })
    )

    it.effect("touchLastUsed writes when never used, not again within the interval, and again after it", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const key = aKeyRecord(yield* storedWorkspaceId)
        yield* keys.insertWithinCap(key, 3, NOW)
        const lastUsed = Effect.map(
          keys.findById(key.id),
          Option.map((k) => k.lastUsedAt)
        )

        expect(yield* keys.touchLastUsed(key.id, NOW, MINUTE)).toBe(true)
        expect(yield* lastUsed).toEqual(Option.some(NOW))
        expect(yield* keys.touchLastUsed(key.id, NOW + MINUTE - 1, MINUTE)).toBe(false)
        expect(yield* lastUsed).toEqual(Option.some(NOW))
        expect(yield* keys.touchLastUsed(key.id, NOW + MINUTE, MINUTE)).toBe(true)
        expect(yield* lastUsed).toEqual(Option.some(NOW + MINUTE))
        expect(yield* keys.touchLastUsed(makeApiKeyId(uniqueId("key")), NOW, MINUTE)).toBe(false)
      })
    )

    it.effect("concurrent touches within the interval write once", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const key = aKeyRecord(yield* storedWorkspaceId)
        yield* keys.insertWithinCap(key, 3, NOW)
        const written = yield* Effect.all(
          Array.from({ length: 10 }, (_, i) => keys.touchLastUsed(key.id, NOW + i, MINUTE)),
          { concurrency: "unbounded" }
        )
        expect(written.filter((w) => w)).toHaveLength(1)
      })
    )
  })
