import { describe, expect, it } from "@effect/vitest"
import { ApiKeyFormat, makeApiKeyId, makeWorkspaceId, type Plan, Provisioning } from "@intake/domain/internal"
import { accessTestLayer, authenticate, issueApiKey, provisionWorkspace } from "@intake/testing"
import { Clock, Effect, Either, TestClock } from "effect"

/** What the client would see of a failure: code, status and details. */
const failureOf = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) =>
    "code" in error && "httpStatus" in error && "details" in error
      ? { code: error.code, status: error.httpStatus, details: error.details }
      : error._tag
  )

const issuePaths = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(failureOf(effect), (failure) =>
    typeof failure === "object" && failure.code === "validation_failed" && failure.status === 400
      ? (failure.details as { issues: ReadonlyArray<{ path: string }> }).issues.map((i) => i.path)
      : failure
  )

describe("Provisioning: workspaces", () => {
  it.effect("creates an active workspace of the plan, with the quota override or null", () =>
    Effect.gen(function* () {
      yield* TestClock.adjust(1_000)
      const provisioning = yield* Provisioning
      const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "business" })
      expect(workspace).toMatchObject({
        name: "Acme",
        plan: "business",
        status: "active",
        monthlySubmissionQuota: null,
        rateLimitPerMinute: null,
        createdAt: 1_000,
        updatedAt: 1_000
      })
      expect(workspace.id).toMatch(/^ws_/)
      const custom = yield* provisioning.createWorkspace({
        name: "Big",
        plan: "pro",
        monthlySubmissionQuota: 0
      })
      expect(custom.monthlySubmissionQuota).toBe(0)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("refuses an empty or too long name, an unknown plan and a bad quota, naming each", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      expect(yield* issuePaths(provisioning.createWorkspace({ name: "", plan: "pro" }))).toEqual(["name"])
      expect(yield* issuePaths(provisioning.createWorkspace({ name: "   ", plan: "pro" }))).toEqual(["name"])
      expect(yield* issuePaths(provisioning.createWorkspace({ name: "x".repeat(201), plan: "pro" }))).toEqual(
        ["name"]
      )
      yield* provisioning.createWorkspace({ name: "x".repeat(200), plan: "pro" })
      expect(
        yield* issuePaths(
          provisioning.createWorkspace({
            name: "Acme",
            plan: "enterprise" as Plan,
            monthlySubmissionQuota: -1
          })
        )
      ).toEqual(["plan", "monthly_submission_quota"])
      expect(
        yield* issuePaths(
          provisioning.createWorkspace({ name: "Acme", plan: "pro", monthlySubmissionQuota: 1.5 })
        )
      ).toEqual(["monthly_submission_quota"])
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("updates plan, status and overrides; null returns to the plan's value", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace()
      yield* TestClock.adjust(5_000)
      const changed = yield* provisioning.updateWorkspace(workspace.id, {
        plan: "business",
        status: "archived",
        monthlySubmissionQuota: 20_000,
        rateLimitPerMinute: 1_000
      })
      expect(changed).toEqual({
        ...workspace,
        plan: "business",
        status: "archived",
        monthlySubmissionQuota: 20_000,
        rateLimitPerMinute: 1_000,
        updatedAt: workspace.updatedAt + 5_000
      })
      const reset = yield* provisioning.updateWorkspace(workspace.id, {
        monthlySubmissionQuota: null,
        rateLimitPerMinute: null
      })
      expect([reset.plan, reset.status, reset.monthlySubmissionQuota, reset.rateLimitPerMinute]).toEqual([
        "business",
        "archived",
        null,
        null
      ])
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("an unknown workspace is 404 workspace; a bad change is 400 before that", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      expect(
        yield* failureOf(provisioning.updateWorkspace(makeWorkspaceId("ws_missing"), { plan: "pro" }))
      ).toEqual({
        code: "resource_not_found",
        status: 404,
        details: { resource: "workspace" }
      })
      expect(
        yield* issuePaths(
          provisioning.updateWorkspace(makeWorkspaceId("ws_missing"), {
            status: "deleted" as "active",
            rateLimitPerMinute: 0,
            monthlySubmissionQuota: -5
          })
        )
      ).toEqual(["status", "monthly_submission_quota", "rate_limit_per_minute"])
    }).pipe(Effect.provide(accessTestLayer()))
  )
})

describe("Provisioning: API keys", () => {
  it.effect("issues the full key once and stores only its hash", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace()
      const now = yield* Clock.currentTimeMillis
      const issued = yield* provisioning.createApiKey(workspace.id, {
        scopes: ["read:submissions", "manage:webhooks"],
        name: "zapier",
        expiresAt: now + 86_400_000
      })
      expect(Either.isRight(ApiKeyFormat.checkKeyFormat(issued.key))).toBe(true)
      expect(issued.apiKey).toMatchObject({
        workspaceId: workspace.id,
        name: "zapier",
        scopes: ["read:submissions", "manage:webhooks"],
        expiresAt: now + 86_400_000,
        revokedAt: null,
        lastUsedAt: null,
        createdAt: now
      })
      expect(issued.apiKey.id).toMatch(/^key_/)
      const fetched = yield* provisioning.getApiKey(issued.apiKey.id)
      expect(fetched).toEqual(issued.apiKey)
      expect(JSON.stringify(fetched)).not.toContain(issued.key.slice(9))
      expect((yield* authenticate(`Bearer ${issued.key}`)).apiKey.id).toBe(issued.apiKey.id)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("scopes must be non-empty, known and distinct; each problem names its index", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace()
      expect(yield* issuePaths(provisioning.createApiKey(workspace.id, { scopes: [] }))).toEqual(["scopes"])
      const bad = [
        "read:submissions",
        "root",
        "read:submissions"
      ] as unknown as ReadonlyArray<"read:submissions">
      expect(yield* issuePaths(provisioning.createApiKey(workspace.id, { scopes: bad }))).toEqual([
        "scopes.1",
        "scopes.2"
      ])
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("expires_at must lie in the future", () =>
    Effect.gen(function* () {
      yield* TestClock.adjust(10_000)
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace()
      for (const expiresAt of [10_000, 9_999]) {
        expect(
          yield* issuePaths(provisioning.createApiKey(workspace.id, { scopes: ["read:records"], expiresAt }))
        ).toEqual(["expires_at"])
      }
      const issued = yield* provisioning.createApiKey(workspace.id, {
        scopes: ["read:records"],
        expiresAt: 10_001
      })
      expect(issued.apiKey.expiresAt).toBe(10_001)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("an unknown workspace is 404 workspace", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      expect(
        yield* failureOf(
          provisioning.createApiKey(makeWorkspaceId("ws_missing"), { scopes: ["read:records"] })
        )
      ).toEqual({
        code: "resource_not_found",
        status: 404,
        details: { resource: "workspace" }
      })
    }).pipe(Effect.provide(accessTestLayer()))
  )

  for (const [plan, max] of [
    ["pro", 3],
    ["business", 10]
  ] as const) {
    it.effect(`a ${plan} workspace holds ${max} usable keys; one more is 429 plan_limit_exceeded`, () =>
      Effect.gen(function* () {
        const provisioning = yield* Provisioning
        const workspace = yield* provisionWorkspace({ plan })
        for (let i = 0; i < max; i++) yield* issueApiKey(workspace.id)
        expect(
          yield* failureOf(provisioning.createApiKey(workspace.id, { scopes: ["read:records"] }))
        ).toEqual({
          code: "plan_limit_exceeded",
          status: 429,
          details: { resource: "api_keys", current: max, max }
        })
      }).pipe(Effect.provide(accessTestLayer()))
    )
  }

  it.effect("a free workspace cannot have keys", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace({ plan: "free" })
      expect(yield* failureOf(provisioning.createApiKey(workspace.id, { scopes: ["read:records"] }))).toEqual(
        {
          code: "plan_limit_exceeded",
          status: 429,
          details: { resource: "api_keys", current: 0, max: 0 }
        }
      )
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("revoked and expired keys free their slot", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const workspace = yield* provisionWorkspace({ plan: "pro" })
      const now = yield* Clock.currentTimeMillis
      const revoked = yield* issueApiKey(workspace.id)
      yield* issueApiKey(workspace.id, { expiresAt: now + 1_000 })
      yield* issueApiKey(workspace.id)
      yield* Effect.flip(provisioning.createApiKey(workspace.id, { scopes: ["read:records"] }))

      yield* provisioning.revokeApiKey(revoked.apiKey.id)
      yield* issueApiKey(workspace.id)
      yield* Effect.flip(provisioning.createApiKey(workspace.id, { scopes: ["read:records"] }))

      yield* TestClock.adjust(1_000)
      yield* issueApiKey(workspace.id)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("revoking is permanent and idempotent: the first revoked_at stays", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const { apiKey } = yield* issueApiKey((yield* provisionWorkspace()).id)
      yield* TestClock.adjust(2_000)
      const first = yield* provisioning.revokeApiKey(apiKey.id)
      expect(first.revokedAt).toBe(2_000)
      yield* TestClock.adjust(2_000)
      const second = yield* provisioning.revokeApiKey(apiKey.id)
      expect(second.revokedAt).toBe(2_000)
      expect((yield* provisioning.getApiKey(apiKey.id)).revokedAt).toBe(2_000)
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("an unknown key is 404 api_key for get and revoke", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const notFound = { code: "resource_not_found", status: 404, details: { resource: "api_key" } }
      expect(yield* failureOf(provisioning.getApiKey(makeApiKeyId("key_missing")))).toEqual(notFound)
      expect(yield* failureOf(provisioning.revokeApiKey(makeApiKeyId("key_missing")))).toEqual(notFound)
    }).pipe(Effect.provide(accessTestLayer()))
  )
})
