/**
 * What the DeliveryRepository contract's parts share (delivery-repository.ts, the queue;
 * delivery-isolation.ts, the endpoints' isolation): the ports, a test on a fresh layer, and
 * an endpoint to queue attempts for.
 */
import { it } from "@effect/vitest"
import {
  type Delivery,
  type DeliveryRepository,
  type EventOutbox,
  makeWorkspaceId,
  type UnitOfWork,
  type WebhookEndpoint,
  WebhookRepository
} from "@intake/domain"
import { Effect, type Layer } from "effect"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export type DeliveryPorts = DeliveryRepository | WebhookRepository | EventOutbox | UnitOfWork

export const LEASE = 60_000
export const DAY = 86_400_000

export const deliveryContractKit = (theLayer: Layer.Layer<DeliveryPorts>) => ({
  /** Each test runs on a fresh layer: the queue is global, a claim sees every due attempt. */
  test: (title: string, body: () => Effect.Effect<void, unknown, DeliveryPorts>) =>
    it.effect(title, () => Effect.provide(body(), checkedStores(theLayer))),
  /** An endpoint of a workspace of its own, stored. */
  givenEndpoint: (overrides: Partial<WebhookEndpoint> = {}) =>
    Effect.gen(function* () {
      const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")), ...overrides })
      yield* (yield* WebhookRepository).insertWithinCap(endpoint, 100)
      return endpoint
    }),
  /** The attempts' ids, sorted, to compare sets. */
  ids: (deliveries: ReadonlyArray<Delivery>) => deliveries.map((d) => d.id).sort()
})

export type DeliveryContractKit = ReturnType<typeof deliveryContractKit>
