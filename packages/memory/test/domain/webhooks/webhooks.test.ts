import { describe, expect, it } from "@effect/vitest"
import {
  makeIntakeBotId,
  makeWebhookId,
  type NewWebhook,
  PlanLimitExceeded,
  ResourceNotFound,
  ValidationFailed,
  verifyReceiverUrl,
  WebhookRepository,
  WebhookSecret,
  Webhooks
} from "@intake/domain/internal"
import { givenBot, givenWorkspace, StaticAddressResolver, webhookRulesLayer } from "@intake/testing"
import { Effect, Either, TestClock } from "effect"

const receiver: NewWebhook = { url: "https://hooks.example.com/intake", events: ["submission.completed"] }
const publicDns = { "hooks.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"] }
const strictLayer = webhookRulesLayer({ addresses: publicDns })

const validationOf = (error: unknown) => {
  expect(error).toBeInstanceOf(ValidationFailed)
  const failed = error as ValidationFailed
  return { status: failed.status, paths: failed.issues.map((issue) => issue.path), issues: failed.issues }
}

describe("Webhooks.create", () => {
  it.effect("creates an active endpoint with a fresh secret and empty delivery state", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("pro")
      yield* TestClock.adjust(1_000)
      const created = yield* webhooks.create(workspace.id, receiver)
      expect(created).toMatchObject({
        workspaceId: workspace.id,
        url: receiver.url,
        events: ["submission.completed"],
        status: "active",
        description: "",
        intakeBotIds: [],
        lastDeliveryAt: null,
        lastDeliveryOk: null,
        consecutiveFails: 0,
        failingSince: null,
        createdAt: 1_000,
        updatedAt: 1_000
      })
      expect(created.id).toMatch(/^wh_[0-9a-z]+$/)
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
      expect(WebhookSecret.secretKey(created.secret)?.length).toBe(32)
      const other = yield* webhooks.create(workspace.id, receiver)
      expect(other.secret).not.toBe(created.secret)
      expect(yield* webhooks.get(workspace.id, created.id)).toEqual(created)
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("keeps the description and the bots of the workspace", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const created = yield* webhooks.create(workspace.id, {
        ...receiver,
        events: ["contact.created", "submission.completed"],
        description: "CRM sync",
        intakeBotIds: [bot.id]
      })
      expect(created.description).toBe("CRM sync")
      expect(created.intakeBotIds).toEqual([bot.id])
      expect(created.events).toEqual(["contact.created", "submission.completed"])
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("400 names every body problem at once", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const error = yield* Effect.flip(
        webhooks.create(workspace.id, {
          url: "http://hooks.example.com/",
          events: ["submission.completed", "nope", "submission.completed"],
          description: "x".repeat(501),
          intakeBotIds: [makeIntakeBotId("bot_a"), makeIntakeBotId("bot_a")]
        })
      )
      const { status, paths } = validationOf(error)
      expect(status).toBe(400)
      expect(paths).toEqual(["url", "events.1", "events.2", "description", "intake_bot_ids.1"])
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("422 for bots that are not the workspace's, naming their positions", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const other = yield* givenWorkspace()
      const mine = yield* givenBot(workspace.id)
      const theirs = yield* givenBot(other.id)
      const error = yield* Effect.flip(
        webhooks.create(workspace.id, {
          ...receiver,
          intakeBotIds: [mine.id, theirs.id, makeIntakeBotId("bot_missing")]
        })
      )
      expect(validationOf(error)).toMatchObject({
        status: 422,
        paths: ["intake_bot_ids.1", "intake_bot_ids.2"]
      })
      expect((yield* webhooks.list(workspace.id, { limit: 10, cursor: null })).items).toEqual([])
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("a pro workspace may have 10 endpoints, the 11th is 429", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("pro")
      for (let i = 0; i < 10; i++) yield* webhooks.create(workspace.id, receiver)
      const error = yield* Effect.flip(webhooks.create(workspace.id, receiver))
      expect(error).toBeInstanceOf(PlanLimitExceeded)
      expect((error as PlanLimitExceeded).details).toEqual({
        resource: "webhook_endpoints",
        current: 10,
        max: 10
      })
      // Deleting one makes room again.
      const first = (yield* webhooks.list(workspace.id, { limit: 1, cursor: null })).items[0]!
      yield* webhooks.remove(workspace.id, first.id)
      yield* webhooks.create(workspace.id, receiver)
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("a business workspace may have 50 endpoints", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("business")
      for (let i = 0; i < 50; i++) yield* webhooks.create(workspace.id, receiver)
      const error = yield* Effect.flip(webhooks.create(workspace.id, receiver))
      expect((error as PlanLimitExceeded).details).toEqual({
        resource: "webhook_endpoints",
        current: 50,
        max: 50
      })
    }).pipe(Effect.provide(strictLayer))
  )
})

describe("receiver addresses", () => {
  const refusedUrls = [
    "http://127.0.0.1/hook",
    "http://[::1]/hook",
    "http://10.0.0.1/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[::ffff:127.0.0.1]/hook",
    "http://internal.example.com/hook"
  ]
  const dns = { ...publicDns, "internal.example.com": ["192.168.10.20"] }

  it.effect("with private networks off: http is 400, forbidden addresses over https are 422", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("business")
      for (const url of refusedUrls) {
        const overHttp = validationOf(yield* Effect.flip(webhooks.create(workspace.id, { ...receiver, url })))
        expect(overHttp).toMatchObject({ status: 400, paths: ["url"] })
        const overHttps = validationOf(
          yield* Effect.flip(
            webhooks.create(workspace.id, { ...receiver, url: url.replace("http:", "https:") })
          )
        )
        expect(overHttps).toMatchObject({ status: 422, paths: ["url"] })
      }
      expect((yield* webhooks.list(workspace.id, { limit: 100, cursor: null })).items).toEqual([])
    }).pipe(Effect.provide(webhookRulesLayer({ addresses: dns })))
  )

  it.effect("with private networks on: the same receivers are accepted over http", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("business")
      for (const url of refusedUrls)
        expect((yield* webhooks.create(workspace.id, { ...receiver, url })).url).toBe(url)
    }).pipe(Effect.provide(webhookRulesLayer({ addresses: dns, allowPrivateNetworks: true })))
  )

  it.effect("a name with one forbidden address among public ones is refused, naming the range", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const error = yield* Effect.flip(
        webhooks.create(workspace.id, { ...receiver, url: "https://mixed.example.com/" })
      )
      const { status, issues } = validationOf(error)
      expect(status).toBe(422)
      expect(issues[0]!.message).toContain("loopback")
    }).pipe(
      Effect.provide(webhookRulesLayer({ addresses: { "mixed.example.com": ["93.184.216.34", "::1"] } }))
    )
  )

  it.effect("a name that does not resolve is 422, as is localhost without a lookup", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const unresolved = validationOf(
        yield* Effect.flip(
          webhooks.create(workspace.id, { ...receiver, url: "https://nowhere.example.com/" })
        )
      )
      expect(unresolved).toMatchObject({ status: 422, paths: ["url"] })
      expect(unresolved.issues[0]!.message).toContain("does not resolve")
      const local = validationOf(
        yield* Effect.flip(webhooks.create(workspace.id, { ...receiver, url: "https://localhost:8443/" }))
      )
      expect(local).toMatchObject({ status: 422, paths: ["url"] })
    }).pipe(Effect.provide(webhookRulesLayer({ addresses: { localhost: ["93.184.216.34"] } })))
  )

  it.effect("422 issues of the address and of the bots come together", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const error = yield* Effect.flip(
        webhooks.create(workspace.id, {
          ...receiver,
          url: "https://10.1.1.1/",
          intakeBotIds: [makeIntakeBotId("bot_missing")]
        })
      )
      expect(validationOf(error)).toMatchObject({ status: 422, paths: ["url", "intake_bot_ids.0"] })
    }).pipe(Effect.provide(strictLayer))
  )
})

describe("Webhooks.list and get", () => {
  it.effect("lists newest first across pages, only the workspace's own", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace("business")
      const other = yield* givenWorkspace("business")
      const created: Array<string> = []
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust(10)
        created.push((yield* webhooks.create(workspace.id, receiver)).id)
        yield* webhooks.create(other.id, receiver)
      }
      const first = yield* webhooks.list(workspace.id, { limit: 2, cursor: null })
      const second = yield* webhooks.list(workspace.id, { limit: 2, cursor: first.nextCursor })
      const third = yield* webhooks.list(workspace.id, { limit: 2, cursor: second.nextCursor })
      expect([...first.items, ...second.items, ...third.items].map((w) => w.id)).toEqual(
        [...created].reverse()
      )
      expect(third.nextCursor).toBeNull()
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("a cursor of another workspace's list is 400 on cursor", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const other = yield* givenWorkspace()
      for (let i = 0; i < 2; i++) yield* webhooks.create(other.id, receiver)
      const page = yield* webhooks.list(other.id, { limit: 1, cursor: null })
      const error = yield* Effect.flip(webhooks.list(workspace.id, { limit: 1, cursor: page.nextCursor }))
      expect(validationOf(error)).toMatchObject({ status: 400, paths: ["cursor"] })
      const garbled = yield* Effect.flip(webhooks.list(workspace.id, { limit: 1, cursor: "not-a-cursor" }))
      expect(validationOf(garbled)).toMatchObject({ status: 400, paths: ["cursor"] })
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("another workspace's endpoint is 404 webhook", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const other = yield* givenWorkspace()
      const theirs = yield* webhooks.create(other.id, receiver)
      for (const error of [
        yield* Effect.flip(webhooks.get(workspace.id, theirs.id)),
        yield* Effect.flip(webhooks.get(workspace.id, makeWebhookId("wh_unknown"))),
        yield* Effect.flip(webhooks.update(workspace.id, theirs.id, { status: "paused" })),
        yield* Effect.flip(webhooks.remove(workspace.id, theirs.id))
      ]) {
        expect(error).toBeInstanceOf(ResourceNotFound)
        expect((error as ResourceNotFound).resource).toBe("webhook")
      }
      expect((yield* webhooks.get(other.id, theirs.id)).status).toBe("active")
    }).pipe(Effect.provide(strictLayer))
  )
})

describe("Webhooks.update and remove", () => {
  it.effect("pauses an endpoint, and updated_at moves", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const created = yield* webhooks.create(workspace.id, receiver)
      yield* TestClock.adjust(5_000)
      const paused = yield* webhooks.update(workspace.id, created.id, { status: "paused" })
      expect(paused).toEqual({ ...created, status: "paused", updatedAt: created.updatedAt + 5_000 })
      expect(yield* webhooks.get(workspace.id, created.id)).toEqual(paused)
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("changes events, description and bots, keeping url and secret", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const bot = yield* givenBot(workspace.id)
      const created = yield* webhooks.create(workspace.id, { ...receiver, description: "old" })
      const updated = yield* webhooks.update(workspace.id, created.id, {
        events: ["contact.created"],
        description: "",
        intakeBotIds: [bot.id]
      })
      expect(updated).toMatchObject({
        url: created.url,
        secret: created.secret,
        events: ["contact.created"],
        description: "",
        intakeBotIds: [bot.id],
        status: "active"
      })
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("re-activating a disabled endpoint resets its failure streak", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const created = yield* webhooks.create(workspace.id, receiver)
      // What the dispatcher will do after days of failures.
      const repo = yield* WebhookRepository
      yield* repo.update({
        ...created,
        status: "disabled",
        consecutiveFails: 12,
        failingSince: 1,
        lastDeliveryOk: false
      })
      const reactivated = yield* webhooks.update(workspace.id, created.id, { status: "active" })
      expect(reactivated).toMatchObject({
        status: "active",
        consecutiveFails: 0,
        failingSince: null,
        lastDeliveryOk: false
      })
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("400 for disabled or bad fields, 422 for foreign bots; nothing changes", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const other = yield* givenWorkspace()
      const theirBot = yield* givenBot(other.id)
      const created = yield* webhooks.create(workspace.id, receiver)
      const badStatus = yield* Effect.flip(
        // The HTTP layer passes the client's string through; the domain judges it.
        webhooks.update(workspace.id, created.id, { status: "disabled" as "paused", events: [] })
      )
      expect(validationOf(badStatus)).toMatchObject({ status: 400, paths: ["events", "status"] })
      const foreign = yield* Effect.flip(
        webhooks.update(workspace.id, created.id, { description: "changed", intakeBotIds: [theirBot.id] })
      )
      expect(validationOf(foreign)).toMatchObject({ status: 422, paths: ["intake_bot_ids.0"] })
      expect(yield* webhooks.get(workspace.id, created.id)).toEqual(created)
    }).pipe(Effect.provide(strictLayer))
  )

  it.effect("removes an endpoint; a second removal is 404", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const created = yield* webhooks.create(workspace.id, receiver)
      yield* webhooks.remove(workspace.id, created.id)
      expect(yield* Effect.flip(webhooks.get(workspace.id, created.id))).toBeInstanceOf(ResourceNotFound)
      expect(yield* Effect.flip(webhooks.remove(workspace.id, created.id))).toBeInstanceOf(ResourceNotFound)
    }).pipe(Effect.provide(strictLayer))
  )
})

describe("verifyReceiverUrl (the check repeated before each delivery)", () => {
  const strict = { allowPrivateNetworks: false }
  const check = (url: string, addresses: Readonly<Record<string, ReadonlyArray<string>>>) =>
    verifyReceiverUrl(url, strict).pipe(Effect.provide(StaticAddressResolver(addresses)), Effect.either)

  it.effect("passes a public receiver and refuses one re-pointed to a private address", () =>
    Effect.gen(function* () {
      expect(yield* check("https://hooks.example.com/", { "hooks.example.com": ["93.184.216.34"] })).toEqual(
        Either.right(undefined)
      )
      const rebound = yield* check("https://hooks.example.com/", { "hooks.example.com": ["10.0.0.7"] })
      expect(Either.isLeft(rebound) && validationOf(rebound.left)).toMatchObject({
        status: 422,
        paths: ["url"]
      })
      const plain = yield* check("http://hooks.example.com/", { "hooks.example.com": ["93.184.216.34"] })
      expect(Either.isLeft(plain) && validationOf(plain.left)).toMatchObject({ status: 400, paths: ["url"] })
    })
  )
})
