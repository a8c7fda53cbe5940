/** Test data and layers for the webhook and idempotency rules. */
import {
  IdempotencyLive,
  IdempotencyStore,
  type IntakeBot,
  makeIntakeBotId,
  makeWebhookId,
  makeWorkspaceId,
  type Plan,
  type WebhookEndpoint,
  WebhookSettings,
  WebhooksLive
} from "@intake/domain"
import {
  MemoryDatabase,
  MemoryIdempotencyStore,
  MemoryIntakeBotRepository,
  MemoryUnitOfWork,
  MemoryWebhookPortsLive,
  MemoryWebhookRepository,
  MemoryWorkspaceRepository
} from "@intake/memory/internal"
import { PlatformLive } from "@intake/node"
import { Effect, Layer } from "effect"
import { aWorkspace, uniqueId } from "./records.js"
import { StaticAddressResolver } from "./static-address-resolver.js"

export const aWebhookEndpoint = (overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
  id: makeWebhookId(uniqueId("wh")),
  workspaceId: makeWorkspaceId("ws_fixture"),
  url: "https://receiver.example.com/hooks",
  events: ["submission.completed"],
  status: "active",
  description: "",
  intakeBotIds: [],
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw0W4wjSrUzPQ=",
  previousSecret: null,
  previousSecretExpiresAt: null,
  lastDeliveryAt: null,
  lastDeliveryOk: null,
  consecutiveFails: 0,
  failingSince: null,
  rateLimit: null,
  circuitOpenUntil: null,
  createdAt: 0,
  updatedAt: 0,
  ...overrides
})

export const anIntakeBot = (overrides: Partial<IntakeBot> = {}): IntakeBot => ({
  id: makeIntakeBotId(uniqueId("bot")),
  workspaceId: makeWorkspaceId("ws_fixture"),
  name: "Lead form",
  description: "",
  status: "ACTIVE",
  shareSlug: Math.random().toString(36).slice(2, 10),
  schema: [{ name: "email", label: "Email", type: "email", required: true }],
  schemaVersion: 1,
  createdAt: 0,
  updatedAt: 0,
  ...overrides
})

/** Stores a workspace straight into the memory database; answers it. */
export const givenWorkspace = (plan: Plan = "pro") =>
  Effect.flatMap(MemoryDatabase, (db) => {
    const workspace = aWorkspace({ plan })
    return Effect.as(
      db.run((t, w) => w.set(t.workspaces, workspace.id, workspace)),
      workspace
    )
  })

/** Stores an intake bot of the workspace straight into the memory database; answers it. */
export const givenBot = (workspaceId: string) =>
  Effect.flatMap(MemoryDatabase, (db) => {
    const bot = anIntakeBot({ workspaceId: makeWorkspaceId(workspaceId) })
    return Effect.as(
      db.run((t, w) => w.set(t.bots, bot.id, bot)),
      bot
    )
  })

export interface WebhookRulesOptions {
  readonly allowPrivateNetworks?: boolean
  /** What the DNS double answers; a name not listed does not resolve. */
  readonly addresses?: Readonly<Record<string, ReadonlyArray<string>>>
  /**
   * Let other fibers run around every idempotency-store call, as a store across a network
   * would: races that the memory scheduler would otherwise never show become visible.
   */
  readonly yieldingIdempotencyStore?: boolean
}

const yieldAround = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.yieldNow().pipe(Effect.zipRight(effect), Effect.zipLeft(Effect.yieldNow()))

/** The memory idempotency store with a yield around each call. */
const YieldingIdempotencyStore = Layer.effect(
  IdempotencyStore,
  Effect.map(IdempotencyStore, (store) =>
    IdempotencyStore.of({
      claim: (...args) => yieldAround(store.claim(...args)),
      claimFresh: (...args) => yieldAround(store.claimFresh(...args)),
      reserve: (...args) => yieldAround(store.reserve(...args)),
      release: (...args) => yieldAround(store.release(...args)),
      complete: (...args) => yieldAround(store.complete(...args)),
      purgeExpired: (now) => yieldAround(store.purgeExpired(now))
    })
  )
).pipe(Layer.provide(MemoryIdempotencyStore))

/** The Webhooks and Idempotency use cases over a fresh memory database. */
export const webhookRulesLayer = (options: WebhookRulesOptions = {}) => {
  const ports = Layer.mergeAll(
    MemoryUnitOfWork,
    options.yieldingIdempotencyStore === true
      ? Layer.merge(MemoryWebhookRepository, YieldingIdempotencyStore)
      : MemoryWebhookPortsLive,
    MemoryWorkspaceRepository,
    MemoryIntakeBotRepository
  ).pipe(Layer.provideMerge(MemoryDatabase.Default))
  const platform = Layer.mergeAll(
    PlatformLive,
    StaticAddressResolver(options.addresses ?? {}),
    WebhookSettings.layer({ allowPrivateNetworks: options.allowPrivateNetworks ?? false })
  )
  return Layer.mergeAll(WebhooksLive, IdempotencyLive).pipe(Layer.provideMerge(Layer.merge(ports, platform)))
}

export type WebhookRulesServices = Layer.Layer.Success<ReturnType<typeof webhookRulesLayer>>
