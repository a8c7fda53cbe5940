/**
 * Webhook endpoint management: list, get, create, update, remove. Delivery is the
 * dispatcher's (a later piece); what it reuses lives beside it in webhooks/ (webhook-url.ts, webhook-secret.ts, receiver-address.ts).
 */
import { Clock, Effect, Either, Layer, Option } from "effect"
import { maxWebhookEndpoints } from "../access/plans.js"
import { WorkspaceRepository } from "../access/ports.js"
import * as Cursor from "../shared/cursor.js"
import { invalid, notFound, type ValidationIssue } from "../shared/errors.js"
import type { IntakeBotId, WebhookId, WorkspaceId } from "../shared/ids.js"
import type { WebhookEndpoint } from "../shared/models.js"
import { Crypto, Ids, UnitOfWork } from "../shared/ports.js"
import { IntakeBotRepository } from "../submissions/ports.js"
import { rateLimitIssues } from "./delivery-isolation.js"
import { AddressResolver, WebhookRepository } from "./ports.js"
import { receiverAddressIssues } from "./receiver-address.js"
import { Webhooks } from "./services.js"
import {
  asEventTypes,
  descriptionIssues,
  eventsIssues,
  intakeBotIdsIssues,
  patchStatusIssues
} from "./webhook-events.js"
import { DEFAULT_GRACE_PERIOD_SECONDS, gracePeriodIssues, newWebhookSecret } from "./webhook-secret.js"
import { WebhookSettings } from "./webhook-settings.js"
import { checkUrlSyntax } from "./webhook-url.js"

const listName = (workspaceId: WorkspaceId) => `webhooks:${workspaceId}`

export const WebhooksLive = Layer.effect(
  Webhooks,
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const ids = yield* Ids
    const uow = yield* UnitOfWork
    const webhooks = yield* WebhookRepository
    const bots = yield* IntakeBotRepository
    const workspaces = yield* WorkspaceRepository
    const resolver = yield* AddressResolver
    // Read once, where the server provides it: callers' fibers need not carry it.
    const settings = yield* WebhookSettings
    const mac = crypto.sha256Hex

    /** 422 issues for the ids that are not bots of the workspace. */
    const foreignBotIssues = (workspaceId: WorkspaceId, botIds: ReadonlyArray<IntakeBotId>) =>
      botIds.length === 0
        ? Effect.succeed<ReadonlyArray<ValidationIssue>>([])
        : Effect.map(bots.existingIds(workspaceId, botIds), (existing) => {
            const known = new Set(existing)
            return botIds.flatMap((id, index) =>
              known.has(id)
                ? []
                : [{ path: `intake_bot_ids.${index}`, message: "is not an intake bot of this workspace" }]
            )
          })

    const findOwn = (workspaceId: WorkspaceId, id: WebhookId) =>
      Effect.flatMap(
        webhooks.findInWorkspace(workspaceId, id),
        Option.match({ onNone: () => Effect.fail(notFound("webhook")), onSome: Effect.succeed })
      )

    return Webhooks.of({
      list: (workspaceId, query) =>
        Effect.gen(function* () {
          const list = listName(workspaceId)
          const after =
            query.cursor === null
              ? null
              : yield* Either.match(Cursor.decodeCursor(list, query.cursor, mac), {
                  onLeft: Effect.fail,
                  onRight: Effect.succeed
                })
          const page = yield* webhooks.list(workspaceId, { limit: query.limit, after })
          return { items: page.items, nextCursor: Cursor.nextCursor(list, page.items, page.hasMore, mac) }
        }),

      get: findOwn,

      create: (workspaceId, input) =>
        Effect.gen(function* () {
          const description = input.description ?? ""
          const intakeBotIds = input.intakeBotIds ?? []
          const url = checkUrlSyntax(input.url, settings)
          const syntaxIssues = [
            ...(url._tag === "Invalid" ? url.issues : []),
            ...eventsIssues(input.events),
            ...descriptionIssues(description),
            ...intakeBotIdsIssues(intakeBotIds),
            ...rateLimitIssues(input.rateLimit ?? null)
          ]
          if (url._tag === "Invalid" || syntaxIssues.length > 0)
            return yield* Effect.fail(invalid(syntaxIssues))

          // Outside the unit of work: a DNS lookup must not hold a transaction open.
          const addressIssues = yield* Effect.provideService(
            receiverAddressIssues(url.target, settings),
            AddressResolver,
            resolver
          )
          return yield* uow.transaction(
            Effect.gen(function* () {
              const issues = [...addressIssues, ...(yield* foreignBotIssues(workspaceId, intakeBotIds))]
              if (issues.length > 0) return yield* Effect.fail(invalid(issues, { status: 422 }))
              const workspace = yield* Effect.flatMap(
                workspaces.findById(workspaceId),
                Option.match({
                  onNone: () =>
                    Effect.dieMessage(`workspace ${workspaceId} of an authenticated key is missing`),
                  onSome: Effect.succeed
                })
              )
              const now = yield* Clock.currentTimeMillis
              const endpoint: WebhookEndpoint = {
                id: yield* ids.next("wh"),
                workspaceId,
                url: input.url,
                events: asEventTypes(input.events),
                status: "active",
                description,
                intakeBotIds,
                secret: newWebhookSecret(crypto.randomBytes),
                previousSecret: null,
                previousSecretExpiresAt: null,
                lastDeliveryAt: null,
                lastDeliveryOk: null,
                consecutiveFails: 0,
                failingSince: null,
                rateLimit: input.rateLimit ?? null,
                circuitOpenUntil: null,
                createdAt: now,
                updatedAt: now
              }
              yield* webhooks.insertWithinCap(endpoint, maxWebhookEndpoints(workspace))
              return endpoint
            })
          )
        }),

      update: (workspaceId, id, changes) =>
        Effect.gen(function* () {
          const issues = [
            ...(changes.events === undefined ? [] : eventsIssues(changes.events)),
            ...(changes.description === undefined ? [] : descriptionIssues(changes.description)),
            ...(changes.status === undefined ? [] : patchStatusIssues(changes.status)),
            ...(changes.intakeBotIds === undefined ? [] : intakeBotIdsIssues(changes.intakeBotIds)),
            ...(changes.rateLimit === undefined ? [] : rateLimitIssues(changes.rateLimit))
          ]
          if (issues.length > 0) return yield* Effect.fail(invalid(issues))
          return yield* uow.transaction(
            Effect.gen(function* () {
              const current = yield* findOwn(workspaceId, id)
              if (changes.intakeBotIds !== undefined) {
                const foreign = yield* foreignBotIssues(workspaceId, changes.intakeBotIds)
                if (foreign.length > 0) return yield* Effect.fail(invalid(foreign, { status: 422 }))
              }
              const now = yield* Clock.currentTimeMillis
              const updated: WebhookEndpoint = {
                ...current,
                ...(changes.events === undefined ? {} : { events: asEventTypes(changes.events) }),
                ...(changes.description === undefined ? {} : { description: changes.description }),
                ...(changes.intakeBotIds === undefined ? {} : { intakeBotIds: changes.intakeBotIds }),
                ...(changes.status === undefined ? {} : { status: changes.status }),
                ...(changes.rateLimit === undefined ? {} : { rateLimit: changes.rateLimit }),
                // Re-enabling starts a fresh failure count (and ends a disabled state) and closes the circuit.
                ...(changes.status === "active"
                  ? { consecutiveFails: 0, failingSince: null, circuitOpenUntil: null }
                  : {}),
                updatedAt: now
              }
              yield* webhooks.update(updated)
              return updated
            })
          )
        }),

      remove: (workspaceId, id) =>
        Effect.flatMap(webhooks.delete(workspaceId, id), (deleted) =>
          deleted ? Effect.void : Effect.fail(notFound("webhook"))
        ),

      rotateSecret: (workspaceId, id, input) =>
        Effect.gen(function* () {
          const graceSeconds = input.gracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS
          const issues = gracePeriodIssues(graceSeconds)
          if (issues.length > 0) return yield* Effect.fail(invalid(issues))
          const now = yield* Clock.currentTimeMillis
          const rotated = yield* webhooks.rotateSecret(
            workspaceId,
            id,
            newWebhookSecret(crypto.randomBytes),
            graceSeconds === 0 ? null : now + graceSeconds * 1_000,
            now
          )
          if (Option.isNone(rotated)) return yield* Effect.fail(notFound("webhook"))
          // Ids only: neither secret is ever logged.
          yield* Effect.logInfo({
            message: "webhook secret rotated",
            webhookId: id,
            previousSecretExpiresAt: rotated.value.previousSecretExpiresAt
          })
          return rotated.value
        })
    })
  })
)
