import { describe, expect, it } from "@effect/vitest"
import {
  Access,
  AccessInvalidation,
  ApiKeyFormat,
  ApiKeyRepository,
  Crypto,
  makeApiKeyId,
  Provisioning,
  WorkspaceRepository
} from "@intake/domain/internal"
import { MemoryDatabase } from "@intake/memory/internal"
import { accessTestLayer, authenticate, bearer, provisionApiKey } from "@intake/testing"
import { Clock, Effect, Option, TestClock } from "effect"

/** What the client would see of a refusal: code, status and details. */
const refusal = (authorization: string | undefined) =>
  Effect.map(Effect.flip(authenticate(authorization)), (error) =>
    "code" in error ? { code: error.code, status: error.httpStatus, details: error.details } : error._tag
  )

const unauthorized = { code: "authentication_required", status: 401, details: undefined }
const archived = { code: "workspace_archived", status: 403, details: undefined }
const noApiAccess = { code: "feature_not_available", status: 403, details: { feature: "api_access" } }

const lastUsedAt = (id: string) =>
  Effect.flatMap(Provisioning, (p) => p.getApiKey(makeApiKeyId(id))).pipe(Effect.map((key) => key.lastUsedAt))

describe("Access.authenticate", () => {
  it.effect("a valid key answers its key and workspace", () =>
    Effect.gen(function* () {
      const { authorization, apiKey, workspace } = yield* provisionApiKey({ scopes: ["manage:webhooks"] })
      const principal = yield* authenticate(authorization)
      expect(principal.apiKey.id).toBe(apiKey.id)
      expect(principal.apiKey.scopes).toEqual(["manage:webhooks"])
      expect(principal.workspace).toEqual(workspace)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("missing, non-Bearer, test, malformed, mistyped and unknown keys are 401", () =>
    Effect.gen(function* () {
      const { key } = yield* provisionApiKey()
      const typo = `${key.slice(0, 20)}${key[20] === "a" ? "b" : "a"}${key.slice(21)}`
      const unknown = ApiKeyFormat.generateApiKey((size) => crypto.getRandomValues(new Uint8Array(size)))
      for (const header of [
        undefined,
        "",
        `Basic ${key}`,
        `Bearer ${key.replace("svc_live_", "svc_test_")}`,
        `Bearer ${key.slice(0, -1)}`,
        bearer(typo),
        bearer(unknown)
      ]) {
        expect([header, yield* refusal(header)]).toEqual([header, unauthorized])
      }
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a key is refused from its expires_at on, also when cached", () =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const { authorization } = yield* provisionApiKey({ key: { expiresAt: now + 10_000 } })
      yield* authenticate(authorization)
      yield* TestClock.adjust(9_999)
      yield* authenticate(authorization)
      yield* TestClock.adjust(1)
      expect(yield* refusal(authorization)).toEqual(unauthorized)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a key revoked through Provisioning is refused at once, although it was cached", () =>
    Effect.gen(function* () {
      const { authorization, apiKey } = yield* provisionApiKey()
      yield* authenticate(authorization)
      yield* Effect.flatMap(Provisioning, (p) => p.revokeApiKey(apiKey.id))
      expect(yield* refusal(authorization)).toEqual(unauthorized)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect(
    "a revocation by another instance is noticed at once when broadcast, and within 60 s when not",
    () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        const broadcast = yield* provisionApiKey()
        const silent = yield* provisionApiKey()
        yield* authenticate(broadcast.authorization)
        yield* authenticate(silent.authorization)

        // Another instance revokes both in the shared store; only the first message arrives.
        const now = yield* Clock.currentTimeMillis
        yield* keys.revoke(broadcast.apiKey.id, now)
        yield* keys.revoke(silent.apiKey.id, now)
        yield* Effect.flatMap(AccessInvalidation, (bus) =>
          bus.publish({ _tag: "ApiKeyChanged", keyHash: broadcast.apiKey.keyHash })
        )
        expect(yield* refusal(broadcast.authorization)).toEqual(unauthorized)

        // The silent one is still cached, but for no longer than the cache's TTL.
        yield* authenticate(silent.authorization)
        yield* TestClock.adjust(60_000)
        expect(yield* refusal(silent.authorization)).toEqual(unauthorized)
      }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a warm key needs no lookup: within the TTL it is answered from the cache", () =>
    Effect.gen(function* () {
      const db = yield* MemoryDatabase
      const { authorization, apiKey } = yield* provisionApiKey()
      yield* authenticate(authorization)
      // Remove the key from the store behind the cache's back: a lookup would now fail.
      yield* db.run((tables, write) => {
        write.remove(tables.apiKeys, apiKey.id)
        write.remove(tables.apiKeysByHash, apiKey.keyHash)
      })
      yield* TestClock.adjust(59_999)
      expect((yield* authenticate(authorization)).apiKey.id).toBe(apiKey.id)
      yield* TestClock.adjust(1)
      expect(yield* refusal(authorization)).toEqual(unauthorized)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("only the SHA-256 of the key is stored and looked up", () =>
    Effect.gen(function* () {
      const { key, apiKey } = yield* provisionApiKey()
      const crypto = yield* Crypto
      expect(apiKey.keyHash).toBe(crypto.sha256Hex(key))
      const stored = yield* Effect.flatMap(ApiKeyRepository, (keys) => keys.findById(apiKey.id))
      expect(JSON.stringify(stored)).not.toContain(key.slice(9, 41))
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("last_used_at is written on use, not again within a minute, and again after it", () =>
    Effect.gen(function* () {
      const start = yield* Clock.currentTimeMillis
      const { authorization, apiKey } = yield* provisionApiKey()
      expect(yield* lastUsedAt(apiKey.id)).toBeNull()
      yield* authenticate(authorization)
      expect(yield* lastUsedAt(apiKey.id)).toBe(start)
      yield* TestClock.adjust(59_999)
      yield* authenticate(authorization)
      expect(yield* lastUsedAt(apiKey.id)).toBe(start)
      yield* TestClock.adjust(1)
      yield* authenticate(authorization)
      expect(yield* lastUsedAt(apiKey.id)).toBe(start + 60_000)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a refused key does not record last_used_at", () =>
    Effect.gen(function* () {
      const { authorization, apiKey, workspace } = yield* provisionApiKey()
      yield* Effect.flatMap(Provisioning, (p) => p.updateWorkspace(workspace.id, { status: "archived" }))
      yield* Effect.flip(authenticate(authorization))
      expect(yield* lastUsedAt(apiKey.id)).toBeNull()
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect(
    "archiving the workspace is 403 workspace_archived at once; unarchiving lets the key in again",
    () =>
      Effect.gen(function* () {
        const provisioning = yield* Provisioning
        const { authorization, workspace } = yield* provisionApiKey()
        yield* authenticate(authorization)
        yield* provisioning.updateWorkspace(workspace.id, { status: "archived" })
        expect(yield* refusal(authorization)).toEqual(archived)
        yield* provisioning.updateWorkspace(workspace.id, { status: "active" })
        expect((yield* authenticate(authorization)).workspace.status).toBe("active")
      }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("moving the workspace to free is 403 feature_not_available at once", () =>
    Effect.gen(function* () {
      const { authorization, workspace } = yield* provisionApiKey({ plan: "business" })
      yield* authenticate(authorization)
      yield* Effect.flatMap(Provisioning, (p) => p.updateWorkspace(workspace.id, { plan: "free" }))
      expect(yield* refusal(authorization)).toEqual(noApiAccess)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("checks run in order: key, then archive, then plan", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const { authorization, apiKey, workspace } = yield* provisionApiKey({ plan: "free" })
      expect(yield* refusal(authorization)).toEqual(noApiAccess)
      yield* provisioning.updateWorkspace(workspace.id, { status: "archived" })
      expect(yield* refusal(authorization)).toEqual(archived)
      yield* provisioning.revokeApiKey(apiKey.id)
      expect(yield* refusal(authorization)).toEqual(unauthorized)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a plan change made by another instance reaches this one by the broadcast", () =>
    Effect.gen(function* () {
      const { authorization, workspace } = yield* provisionApiKey()
      yield* authenticate(authorization)
      const workspaces = yield* WorkspaceRepository
      yield* workspaces.update({ ...workspace, plan: "free" })
      yield* Effect.flatMap(AccessInvalidation, (bus) =>
        bus.publish({ _tag: "WorkspaceChanged", workspaceId: workspace.id })
      )
      expect(yield* refusal(authorization)).toEqual(noApiAccess)
      expect(Option.isSome(yield* workspaces.findById(workspace.id))).toBe(true)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("requireScope passes a granted scope and refuses another with required and granted", () =>
    Effect.gen(function* () {
      const access = yield* Access
      const { authorization } = yield* provisionApiKey({ scopes: ["read:submissions", "read:contacts"] })
      const principal = yield* authenticate(authorization)
      yield* access.requireScope(principal, "read:submissions")
      const error = yield* Effect.flip(access.requireScope(principal, "manage:webhooks"))
      expect([error.code, error.httpStatus, error.details]).toEqual([
        "insufficient_scopes",
        403,
        { required: ["manage:webhooks"], granted: ["read:submissions", "read:contacts"] }
      ])
    }).pipe(Effect.provide(accessTestLayer()))
  )
})
