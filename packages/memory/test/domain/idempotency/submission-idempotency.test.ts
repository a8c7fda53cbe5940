/**
 * The idempotency rule end to end on the real Submissions use case over memory adapters:
 * what a client retrying a create would see.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Idempotency,
  IntakeBots,
  makeApiKeyId,
  makeIntakeBotId,
  makeWorkspaceId,
  PlanLimitExceeded,
  Provisioning,
  type SubmissionDetail,
  Submissions,
  UseCasesLive,
  WebhookSettings
} from "@intake/domain"
import { MemoryDatabase, MemoryPortsLive } from "@intake/memory/internal"
import { NodePlatformLive } from "@intake/node"
import { newIntakeBot, validSubmissionData } from "@intake/testing"
import { Effect, Layer } from "effect"

const runtime = () =>
  UseCasesLive.pipe(
    Layer.provideMerge(MemoryPortsLive.pipe(Layer.provideMerge(NodePlatformLive))),
    Layer.provide(WebhookSettings.layer({ allowPrivateNetworks: false }))
  )

const sceneWithQuota = (monthlySubmissionQuota: number | null) =>
  Effect.gen(function* () {
    const workspace = yield* (yield* Provisioning).createWorkspace({
      name: "Acme",
      plan: "pro",
      monthlySubmissionQuota
    })
    const issued = yield* (yield* Provisioning).createApiKey(workspace.id, { scopes: ["write:intake-bots"] })
    const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
    return { workspace, apiKeyId: issued.apiKey.id, bot }
  })

const scene = Effect.gen(function* () {
  const workspace = yield* (yield* Provisioning).createWorkspace({ name: "Acme", plan: "pro" })
  const issued = yield* (yield* Provisioning).createApiKey(workspace.id, { scopes: ["write:intake-bots"] })
  const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
  return { workspace, apiKeyId: issued.apiKey.id, bot }
})

const createWithKey = (
  workspaceId: string,
  botId: string,
  apiKeyId: string,
  key: string,
  data: Record<string, unknown>
) =>
  Effect.gen(function* () {
    const idempotency = yield* Idempotency
    const submissions = yield* Submissions
    const path = `/v1/intake-bots/${botId}/submissions`
    return yield* idempotency.run(
      { apiKeyId: makeApiKeyId(apiKeyId), key, fingerprint: idempotency.fingerprint("POST", path, { data }) },
      submissions.create(makeWorkspaceId(workspaceId), makeIntakeBotId(botId), { data }),
      {
        onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
        // As the server stores them: a refusal once the operation started (here, the quota).
        onFailure: (error: unknown) =>
          error instanceof PlanLimitExceeded ? { status: 429, body: { code: error.code } } : undefined
      }
    )
  })

const storedSubmissions = (workspaceId: string) =>
  Effect.flatMap(MemoryDatabase, (db) =>
    db.run((t) => [...t.submissions.values()].filter((submission) => submission.workspaceId === workspaceId))
  )

describe("idempotent submission creates", () => {
  it.effect("20 concurrent identical creates with one key store one submission; the rest replay it", () =>
    Effect.gen(function* () {
      const { workspace, apiKeyId, bot } = yield* scene
      const outcomes = yield* Effect.all(
        Array.from({ length: 20 }, () =>
          Effect.either(createWithKey(workspace.id, bot.id, apiKeyId, "retry-1", validSubmissionData()))
        ),
        { concurrency: "unbounded" }
      )
      const stored = yield* storedSubmissions(workspace.id)
      expect(stored).toHaveLength(1)
      const fresh = outcomes.filter((o) => o._tag === "Right" && o.right._tag === "Fresh")
      expect(fresh).toHaveLength(1)
      for (const outcome of outcomes) {
        if (outcome._tag === "Left") expect(outcome.left._tag).toBe("IdempotencyConflict")
        else if (outcome.right._tag === "Replayed")
          expect(outcome.right.response).toEqual({ status: 201, body: { id: stored[0]!.id } })
      }
    }).pipe(Effect.provide(runtime()))
  )

  it.effect("the same key with another body is a conflict and stores nothing more", () =>
    Effect.gen(function* () {
      const { workspace, apiKeyId, bot } = yield* scene
      yield* createWithKey(workspace.id, bot.id, apiKeyId, "retry-2", validSubmissionData())
      const conflict = yield* Effect.flip(
        createWithKey(
          workspace.id,
          bot.id,
          apiKeyId,
          "retry-2",
          validSubmissionData({ name: "Someone Else" })
        )
      )
      expect(conflict._tag).toBe("IdempotencyConflict")
      expect(yield* storedSubmissions(workspace.id)).toHaveLength(1)
    }).pipe(Effect.provide(runtime()))
  )

  // The quota reservation runs last, after the stored response (last-steps.ts): its refusal
  // must still undo the create and its stored 201, and be stored and replayed itself.
  it.effect(
    "past the quota a keyed create is refused, nothing of it stays, and a retry with the key replays the refusal",
    () =>
      Effect.gen(function* () {
        const { workspace, apiKeyId, bot } = yield* sceneWithQuota(1)
        const first = yield* createWithKey(workspace.id, bot.id, apiKeyId, "q-1", validSubmissionData())
        expect(first._tag).toBe("Fresh")
        const data = validSubmissionData({ name: "Second" })
        const refused = yield* Effect.flip(createWithKey(workspace.id, bot.id, apiKeyId, "q-2", data))
        expect(refused._tag).toBe("PlanLimitExceeded")
        expect(yield* storedSubmissions(workspace.id)).toHaveLength(1)
        // The quota frees up (an operator raises it): the same key still answers as it did.
        yield* (yield* Provisioning).updateWorkspace(workspace.id, { monthlySubmissionQuota: 10 })
        const retried = yield* createWithKey(workspace.id, bot.id, apiKeyId, "q-2", data)
        expect(retried).toEqual({
          _tag: "Replayed",
          response: { status: 429, body: { code: "plan_limit_exceeded" } }
        })
        expect(yield* storedSubmissions(workspace.id)).toHaveLength(1)
        // A new key is a new request: it is created now.
        const fresh = yield* createWithKey(workspace.id, bot.id, apiKeyId, "q-3", data)
        expect(fresh._tag).toBe("Fresh")
        expect(yield* storedSubmissions(workspace.id)).toHaveLength(2)
      }).pipe(Effect.provide(runtime()))
  )
})
