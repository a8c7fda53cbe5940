import { expect, layer } from "@effect/vitest"
import { makeWorkspaceId, type Workspace, WorkspaceRepository } from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export const workspaceRepositoryContract = (
  name: string,
  repositoryLayer: Layer.Layer<WorkspaceRepository>
) =>
  layer(checkedStores(repositoryLayer))(`WorkspaceRepository contract: ${name}`, (it) => {
    it.effect("finds an inserted workspace by id, with every field as stored", () =>
      Effect.gen(function* () {
        const repository = yield* WorkspaceRepository
        const workspace = aWorkspace({ plan: "business", monthlySubmissionQuota: 25_000 })
        yield* repository.insert(workspace)
        expect(yield* repository.findById(workspace.id)).toEqual(Option.some(workspace))
      })
    )

    it.effect("answers none for an unknown id", () =>
      Effect.gen(function* () {
        const repository = yield* WorkspaceRepository
        expect(yield* repository.findById(makeWorkspaceId(uniqueId("ws")))).toEqual(Option.none())
      })
    )

    it.effect("update replaces plan, status and overrides", () =>
      Effect.gen(function* () {
        const repository = yield* WorkspaceRepository
        const workspace = aWorkspace()
        yield* repository.insert(workspace)
        const changed: Workspace = {
          ...workspace,
          plan: "free",
          status: "archived",
          monthlySubmissionQuota: 0,
          rateLimitPerMinute: 7,
          updatedAt: workspace.updatedAt + 1_000
        }
        yield* repository.update(changed)
        expect(yield* repository.findById(workspace.id)).toEqual(Option.some(changed))
        yield* repository.update({ ...changed, monthlySubmissionQuota: null, rateLimitPerMinute: null })
        const back = yield* repository.findById(workspace.id)
        expect(Option.map(back, (w) => [w.monthlySubmissionQuota, w.rateLimitPerMinute])).toEqual(
          Option.some([null, null])
        )
      })
    )

    it.effect("update of an unknown workspace creates nothing", () =>
      Effect.gen(function* () {
        const repository = yield* WorkspaceRepository
        const ghost = aWorkspace()
        yield* repository.update(ghost)
        expect(yield* repository.findById(ghost.id)).toEqual(Option.none())
      })
    )
  })
