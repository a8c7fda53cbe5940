/**
 * The idempotency rule end to end on the real Submissions use case over memory adapters:
 * what a client retrying a create would see.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Idempotency,
  IntakeBots,
  Provisioning,
  type SubmissionDetail,
  Submissions,
  UseCasesLive,
  WebhookSettings
} from "@intake/domain"
import { MemoryDatabase, MemoryPortsLive } from "@intake/memory"
import { NodePlatformLive } from "@intake/node"
import { newIntakeBot, validSubmissionData } from "@intake/testing"
import { Effect, Layer } from "effect"

const runtime = () =>
  UseCasesLive.pipe(
    Layer.provideMerge(MemoryPortsLive.pipe(Layer.provideMerge(NodePlatformLive))),
    Layer.provide(WebhookSettings.layer({ allowPrivateNetworks: false }))
  )

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
      { apiKeyId, key, fingerprint: idempotency.fingerprint("POST", path, { data }) },
      submissions.create(workspaceId, botId, { data }),
      {
        onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
        onFailure: () => undefined
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
})
