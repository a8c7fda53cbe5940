/**
 * Stub use cases for what only a stub can show: a defect carrying driver text must
 * answer a sanitized 500. Anything a test did not stub dies.
 */
import {
  Access,
  AuthenticationRequired,
  allScopes,
  Deliveries,
  Idempotency,
  IntakeBots,
  makeApiKeyId,
  makeWorkspaceId,
  Provisioning,
  Submissions,
  Webhooks
} from "@intake/domain"
import { NodeCryptoLive } from "@intake/node"
import { Effect, Layer } from "effect"

export const STUB_KEY = "svc_live_stubstubstubstubstubstubstubstub000000"

const unstubbed = (name: string) =>
  new Proxy({}, { get: (_, method) => () => Effect.die(`${name}.${String(method)} is not stubbed`) })

const principal = {
  apiKey: {
    id: makeApiKeyId("key_stub"),
    workspaceId: makeWorkspaceId("ws_stub"),
    name: null,
    keyHash: "",
    scopes: allScopes,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    createdAt: 0
  },
  workspace: {
    id: makeWorkspaceId("ws_stub"),
    name: "Stub",
    plan: "pro" as const,
    status: "active" as const,
    monthlySubmissionQuota: null,
    rateLimitPerMinute: null,
    createdAt: 0,
    updatedAt: 0
  }
}

const allowed = Effect.sync(() => ({
  allowed: true,
  limit: 100,
  remaining: 99,
  resetAt: Date.now() + 60_000,
  retryAfterSeconds: 0
}))

export const StubServices = Layer.mergeAll(
  Layer.succeed(Access, {
    authenticate: (header) =>
      header === `Bearer ${STUB_KEY}`
        ? Effect.succeed(principal)
        : header === "Bearer boom"
          ? Effect.die(new Error("connect ECONNREFUSED 10.0.0.5:5432 (pg driver)"))
          : Effect.fail(new AuthenticationRequired({ message: "A valid API key is required." })),
    authorizeOperator: () =>
      Effect.fail(new AuthenticationRequired({ message: "A valid operator token is required." })),
    limitKey: () => allowed,
    limitAnonymous: () => allowed,
    peekAnonymous: () => allowed,
    requireScope: () => Effect.void,
    limiterFailingOpen: Effect.succeed(false),
    limiterFailedOpen: Effect.succeed(0)
  }),
  Layer.succeed(IntakeBots, {
    ...(unstubbed("IntakeBots") as IntakeBots["Type"]),
    get: () =>
      Effect.die(new Error('relation "intake_bots" does not exist: SELECT * FROM intake_bots WHERE id = $1'))
  }),
  Layer.succeed(Submissions, unstubbed("Submissions") as Submissions["Type"]),
  Layer.succeed(Webhooks, unstubbed("Webhooks") as Webhooks["Type"]),
  Layer.succeed(Provisioning, unstubbed("Provisioning") as Provisioning["Type"]),
  Layer.succeed(Idempotency, unstubbed("Idempotency") as Idempotency["Type"]),
  Layer.succeed(Deliveries, unstubbed("Deliveries") as Deliveries["Type"]),
  NodeCryptoLive
)
