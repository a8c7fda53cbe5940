/**
 * The contract suites' answer check (packages/testing, contracts/answer-shapes.ts): a store
 * answering a shape the domain's schema refuses fails the case that reads it.
 */
import { describe, expect, it } from "@effect/vitest"
import { makeWorkspaceId, WorkspaceRepository } from "@intake/domain"
import { aWorkspace, checkedStores } from "@intake/testing"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemoryWorkspaceRepository } from "../src/workspace-repository.js"

const workspaces = MemoryWorkspaceRepository.pipe(Layer.provide(MemoryDatabase.Default))

/** The memory store, its findById answer changed by `change`. */
const answering = (change: (workspace: Record<string, unknown>) => Record<string, unknown>) =>
  Layer.effect(
    WorkspaceRepository,
    Effect.map(WorkspaceRepository, (store) => ({
      ...store,
      findById: (id: string) =>
        Effect.map(
          store.findById(makeWorkspaceId(id)),
          Option.map((w) => change({ ...w }) as unknown as typeof w)
        )
    }))
  ).pipe(Layer.provide(workspaces))

const findBack = Effect.gen(function* () {
  const store = yield* WorkspaceRepository
  const workspace = aWorkspace()
  yield* store.insert(workspace)
  return yield* store.findById(workspace.id)
})

describe("checkedStores", () => {
  it.effect("passes a store's answers of the right shape through unchanged", () =>
    Effect.gen(function* () {
      const found = yield* findBack.pipe(Effect.provide(checkedStores(workspaces)))
      expect(Option.isSome(found)).toBe(true)
    })
  )

  it.effect.each([
    ["a field missing", ({ plan: _, ...rest }: Record<string, unknown>) => rest, /plan/],
    [
      "a time as text",
      (w: Record<string, unknown>) => ({ ...w, createdAt: String(w.createdAt) }),
      /createdAt/
    ],
    ["a column left over", (w: Record<string, unknown>) => ({ ...w, workspace_id: w.id }), /workspace_id/],
    ["a value outside its literals", (w: Record<string, unknown>) => ({ ...w, status: "ACTIVE" }), /status/]
  ] as const)("fails the case on an answer with %s, naming the method and the field", ([, change, field]) =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(findBack.pipe(Effect.provide(checkedStores(answering(change)))))
      expect(Exit.isFailure(exit)).toBe(true)
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      expect(String(defect)).toMatch(/WorkspaceRepository\.findById answered a shape/)
      expect(String(defect)).toMatch(field)
    })
  )
})
