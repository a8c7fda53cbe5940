/**
 * Branded ids (docs/architecture.md, Branded ids): ids of different resources are distinct
 * types, so that arguments given in the wrong order fail to compile. The `@ts-expect-error`
 * lines are the proof: `tsc --noEmit` fails when one of them compiles, i.e. when a brand is
 * lost. At run time the ids stay plain strings.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  type ApiKeyId,
  type DeliveryId,
  Ids,
  type IntakeBotId,
  type IntakeBotRepository,
  makeIntakeBotId,
  makeSubmissionId,
  makeWorkspaceId,
  type SubmissionId,
  type SubmissionRepository,
  type Submissions,
  type WebhookId,
  WorkspaceId
} from "@intake/domain"
import { PlatformLive } from "@intake/node"
import { Effect, Schema } from "effect"

/** Never called: it exists for the compiler, which checks every call in it. */
const swappedArgumentsFailToCompile = (
  bots: IntakeBotRepository["Type"],
  submissions: SubmissionRepository["Type"],
  useCase: Submissions["Type"],
  workspaceId: WorkspaceId,
  intakeBotId: IntakeBotId,
  submissionId: SubmissionId
) => [
  bots.findInWorkspace(workspaceId, intakeBotId),
  // @ts-expect-error a bot's id where the workspace's goes, and the other way round
  bots.findInWorkspace(intakeBotId, workspaceId),
  submissions.findInBot(workspaceId, intakeBotId, submissionId),
  // @ts-expect-error the workspace's and the bot's ids swapped
  submissions.findInBot(intakeBotId, workspaceId, submissionId),
  // @ts-expect-error the bot's and the submission's ids swapped
  submissions.findInBot(workspaceId, submissionId, intakeBotId),
  useCase.get(workspaceId, intakeBotId, submissionId),
  // @ts-expect-error the use case takes the workspace first
  useCase.get(intakeBotId, workspaceId, submissionId),
  // @ts-expect-error a plain string is no id: it becomes one at an edge, through its constructor
  bots.findInWorkspace("ws_1", intakeBotId)
]

describe("branded ids", () => {
  it.effect("Ids makes each prefix's brand, and the ids are plain strings with their prefix", () =>
    Effect.gen(function* () {
      const ids = yield* Ids
      const workspaceId: WorkspaceId = yield* ids.next("ws")
      const intakeBotId: IntakeBotId = ids.at("bot", 0)
      const webhookId: WebhookId = ids.at("wh", 0)
      const deliveryId: DeliveryId = ids.at("dlv", 0)
      const apiKeyId: ApiKeyId = ids.at("key", 0)
      // @ts-expect-error a workspace's id is not a bot's
      const notABot: IntakeBotId = yield* ids.next("ws")
      for (const [id, prefix] of [
        [workspaceId, "ws_"],
        [intakeBotId, "bot_"],
        [webhookId, "wh_"],
        [deliveryId, "dlv_"],
        [apiKeyId, "key_"],
        [notABot, "ws_"]
      ] as const) {
        expect(typeof id).toBe("string")
        expect(id.startsWith(prefix)).toBe(true)
      }
    }).pipe(Effect.provide(PlatformLive))
  )

  it("a constructor answers its argument, as the schema decodes it", () => {
    // The swapped calls above are for the compiler only: nothing here calls them.
    expect(swappedArgumentsFailToCompile).toBeTypeOf("function")
    expect(makeWorkspaceId("ws_1")).toBe("ws_1")
    const decoded: WorkspaceId = Schema.decodeUnknownSync(WorkspaceId)("ws_1")
    const made: WorkspaceId = makeWorkspaceId("ws_1")
    expect(made).toBe(decoded)
    expect([makeIntakeBotId("bot_1"), makeSubmissionId("sub_1")]).toEqual(["bot_1", "sub_1"])
  })
})
