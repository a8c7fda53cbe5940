import { expect, layer } from "@effect/vitest"
import { PlanLimitExceeded, UsageCounters, WorkspaceRepository } from "@intake/domain"
import { Effect, Either, type Layer } from "effect"
import { aWorkspace } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export const usageCountersContract = (
  name: string,
  theLayer: Layer.Layer<UsageCounters | WorkspaceRepository>
): void =>
  layer(checkedStores(theLayer))(`UsageCounters contract (${name})`, (it) => {
    const givenWorkspace = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      return workspace.id
    })

    it.effect("counts reservations per workspace and period", () =>
      Effect.gen(function* () {
        const usage = yield* UsageCounters
        const workspaceId = yield* givenWorkspace
        const other = yield* givenWorkspace
        expect(yield* usage.submissionsUsed(workspaceId, "2026-11")).toBe(0)
        expect(yield* usage.reserveSubmission(workspaceId, "2026-11", 5)).toBe(1)
        expect(yield* usage.reserveSubmission(workspaceId, "2026-11", 5)).toBe(2)
        expect(yield* usage.reserveSubmission(workspaceId, "2026-12", 5)).toBe(1)
        expect(yield* usage.submissionsUsed(workspaceId, "2026-11")).toBe(2)
        expect(yield* usage.submissionsUsed(other, "2026-11")).toBe(0)
      })
    )

    it.effect("refuses a reservation at the maximum with plan_limit_exceeded, and counts nothing", () =>
      Effect.gen(function* () {
        const usage = yield* UsageCounters
        const workspaceId = yield* givenWorkspace
        yield* usage.reserveSubmission(workspaceId, "2026-11", 2)
        yield* usage.reserveSubmission(workspaceId, "2026-11", 2)
        const refused = yield* Effect.flip(usage.reserveSubmission(workspaceId, "2026-11", 2))
        expect(refused).toBeInstanceOf(PlanLimitExceeded)
        expect((refused as PlanLimitExceeded).details).toEqual({
          resource: "submissions",
          current: 2,
          max: 2
        })
        expect(yield* usage.submissionsUsed(workspaceId, "2026-11")).toBe(2)
        // A raised maximum (an operator override) admits more at once.
        expect(yield* usage.reserveSubmission(workspaceId, "2026-11", 3)).toBe(3)
      })
    )

    it.effect("a maximum of 0 admits nothing", () =>
      Effect.gen(function* () {
        const usage = yield* UsageCounters
        const workspaceId = yield* givenWorkspace
        const refused = yield* Effect.flip(usage.reserveSubmission(workspaceId, "2026-11", 0))
        expect((refused as PlanLimitExceeded).details).toEqual({
          resource: "submissions",
          current: 0,
          max: 0
        })
      })
    )

    it.effect("30 concurrent reservations with 10 left reserve exactly 10", () =>
      Effect.gen(function* () {
        const usage = yield* UsageCounters
        const workspaceId = yield* givenWorkspace
        for (let i = 0; i < 5; i++) yield* usage.reserveSubmission(workspaceId, "2026-11", 15)
        const results = yield* Effect.all(
          Array.from({ length: 30 }, () =>
            Effect.either(usage.reserveSubmission(workspaceId, "2026-11", 15))
          ),
          { concurrency: "unbounded" }
        )
        const granted = results.filter(Either.isRight).map((result) => result.right)
        expect(granted.sort((a, b) => a - b)).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
        const refusals = results.filter(Either.isLeft).map((result) => result.left)
        expect(refusals).toHaveLength(20)
        for (const refusal of refusals) {
          expect(refusal).toBeInstanceOf(PlanLimitExceeded)
          expect((refusal as PlanLimitExceeded).details).toEqual({
            resource: "submissions",
            current: 15,
            max: 15
          })
        }
        expect(yield* usage.submissionsUsed(workspaceId, "2026-11")).toBe(15)
      })
    )
  })
