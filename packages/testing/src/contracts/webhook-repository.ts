/** The contract every WebhookRepository adapter keeps. */

import { expect, layer } from "@effect/vitest"
import {
  makeIntakeBotId,
  makeWorkspaceId,
  PlanLimitExceeded,
  type UnitOfWork,
  type WebhookEndpoint,
  WebhookRepository
} from "@intake/domain"
import { Effect, Either, type Layer, Option } from "effect"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export const webhookRepositoryContract = (
  name: string,
  theLayer: Layer.Layer<WebhookRepository | UnitOfWork>
): void => {
  layer(checkedStores(theLayer))(`WebhookRepository contract: ${name}`, (it) => {
    it.effect("stores an endpoint and finds it in its workspace", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const endpoint = aWebhookEndpoint({
          workspaceId: makeWorkspaceId(uniqueId("ws")),
          intakeBotIds: [makeIntakeBotId("bot_a"), makeIntakeBotId("bot_b")]
        })
        yield* repo.insertWithinCap(endpoint, 10)
        expect(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id)).toEqual(Option.some(endpoint))
      })
    )

    it.effect("refuses the insert past the cap with current and max", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const workspaceId = uniqueId("ws")
        for (let i = 0; i < 2; i++)
          yield* repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 2)
        const refused = yield* Effect.flip(
          repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 2)
        )
        expect(refused).toBeInstanceOf(PlanLimitExceeded)
        expect((refused as PlanLimitExceeded).details).toEqual({
          resource: "webhook_endpoints",
          current: 2,
          max: 2
        })
        // Another workspace has its own count.
        yield* repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")) }), 2)
      })
    )

    it.effect("15 concurrent inserts under a cap of 10 store exactly 10", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const workspaceId = uniqueId("ws")
        const results = yield* Effect.all(
          Array.from({ length: 15 }, () =>
            Effect.either(
              repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 10)
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Either.isRight)).toHaveLength(10)
        const refusals = results.filter(Either.isLeft).map((r) => r.left)
        expect(refusals).toHaveLength(5)
        for (const refusal of refusals) expect(refusal).toBeInstanceOf(PlanLimitExceeded)
        const listed = yield* repo.list(makeWorkspaceId(workspaceId), { limit: 100, after: null })
        expect(listed.items).toHaveLength(10)
      })
    )

    it.effect("lists newest first and pages by keyset without gaps or repeats", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const workspaceId = uniqueId("ws")
        // Two share a timestamp: the id breaks the tie.
        const endpoints = [1000, 3000, 2000, 2000, 5000, 4000].map((createdAt) =>
          aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId), createdAt, updatedAt: createdAt })
        )
        for (const endpoint of endpoints) yield* repo.insertWithinCap(endpoint, 50)
        const expected = [...endpoints]
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
          .map((e) => e.id)

        const seen: Array<string> = []
        let after: { createdAt: number; id: string } | null = null
        let pages = 0
        for (;;) {
          const page: { items: ReadonlyArray<WebhookEndpoint>; hasMore: boolean } = yield* repo.list(
            makeWorkspaceId(workspaceId),
            {
              limit: 4,
              after
            }
          )
          pages++
          seen.push(...page.items.map((e) => e.id))
          const last = page.items[page.items.length - 1]
          if (!page.hasMore || last === undefined) break
          after = { createdAt: last.createdAt, id: last.id }
        }
        expect(seen).toEqual(expected)
        expect(pages).toBe(2)
      })
    )

    it.effect("a page that ends exactly at the last item says there is no more", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const workspaceId = uniqueId("ws")
        for (const createdAt of [1, 2])
          yield* repo.insertWithinCap(
            aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId), createdAt }),
            10
          )
        const page = yield* repo.list(makeWorkspaceId(workspaceId), { limit: 2, after: null })
        expect(page.items).toHaveLength(2)
        expect(page.hasMore).toBe(false)
      })
    )

    it.effect("keeps workspaces apart: find, list, update and delete", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const mine = uniqueId("ws")
        const theirs = uniqueId("ws")
        const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(mine) })
        yield* repo.insertWithinCap(endpoint, 10)
        yield* repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(theirs) }), 10)

        expect(yield* repo.findInWorkspace(makeWorkspaceId(theirs), endpoint.id)).toEqual(Option.none())
        expect(
          (yield* repo.list(makeWorkspaceId(mine), { limit: 10, after: null })).items.map((e) => e.id)
        ).toEqual([endpoint.id])
        expect(yield* repo.delete(makeWorkspaceId(theirs), endpoint.id)).toBe(false)
        expect(Option.isSome(yield* repo.findInWorkspace(makeWorkspaceId(mine), endpoint.id))).toBe(true)
      })
    )

    it.effect("updates an endpoint and deletes it once", () =>
      Effect.gen(function* () {
        const repo = yield* WebhookRepository
        const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")) })
        yield* repo.insertWithinCap(endpoint, 10)
        const paused = { ...endpoint, status: "paused" as const, updatedAt: endpoint.updatedAt + 1 }
        yield* repo.update(paused)
        expect(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id)).toEqual(Option.some(paused))
        expect(yield* repo.delete(endpoint.workspaceId, endpoint.id)).toBe(true)
        expect(yield* repo.delete(endpoint.workspaceId, endpoint.id)).toBe(false)
        expect(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id)).toEqual(Option.none())
      })
    )

    it.effect(
      "rotates the secret atomically: the current one becomes the previous one, an older previous one is dropped, and update leaves the secrets alone",
      () =>
        Effect.gen(function* () {
          const repo = yield* WebhookRepository
          const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")) })
          yield* repo.insertWithinCap(endpoint, 10)
          const [first, second, third] = [
            "whsec_Rmlyc3Qgcm90YXRlZCBzZWNyZXQgZm9yIHRlc3RzIQ==",
            "whsec_U2Vjb25kIHJvdGF0ZWQgc2VjcmV0IGZvciB0ZXN0cw==",
            "whsec_VGhpcmQgcm90YXRlZCBzZWNyZXQgZm9yIHRlc3RzIQ=="
          ]
          const once = yield* repo.rotateSecret(endpoint.workspaceId, endpoint.id, first!, 5_000, 1_000)
          const expected = {
            ...endpoint,
            secret: first!,
            previousSecret: endpoint.secret,
            previousSecretExpiresAt: 5_000,
            updatedAt: 1_000
          }
          expect(once).toEqual(Option.some(expected))
          expect(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id)).toEqual(
            Option.some(expected)
          )

          // An update made from a copy read before the rotation does not undo it.
          yield* repo.update({ ...endpoint, description: "renamed", updatedAt: 1_500 })
          const updated = Option.getOrThrow(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id))
          expect(updated).toMatchObject({
            description: "renamed",
            secret: first,
            previousSecret: endpoint.secret
          })

          const twice = yield* repo.rotateSecret(endpoint.workspaceId, endpoint.id, second!, 9_000, 2_000)
          expect(Option.getOrThrow(twice)).toMatchObject({
            secret: second,
            previousSecret: first,
            previousSecretExpiresAt: 9_000
          })
          // No grace period: the old secret is dropped at once.
          const atOnce = yield* repo.rotateSecret(endpoint.workspaceId, endpoint.id, third!, null, 3_000)
          expect(Option.getOrThrow(atOnce)).toMatchObject({
            secret: third,
            previousSecret: null,
            previousSecretExpiresAt: null,
            updatedAt: 3_000
          })
          // Another workspace's endpoint, or none: nothing changes.
          expect(
            yield* repo.rotateSecret(makeWorkspaceId(uniqueId("ws")), endpoint.id, first!, null, 4_000)
          ).toEqual(Option.none())
          expect(
            Option.getOrThrow(yield* repo.findInWorkspace(endpoint.workspaceId, endpoint.id)).secret
          ).toBe(third)
        })
    )
  })
}
