/**
 * The contract of DeliveryRepository.dispatchSources (docs/webhooks.md, "How the engine
 * sends"): for each claimed attempt, in one read, its endpoint and the endpoint's workspace,
 * its event, and the event's sources as the payload needs them (the submission with its
 * messages and its bot; the contact), null where a row is gone. Runs on a store shared
 * with other contracts: every row is under ids of its own.
 */

import { expect, layer } from "@effect/vitest"
import {
  ContactRepository,
  DeliveryRepository,
  EventOutbox,
  IntakeBotRepository,
  makeWebhookId,
  SubmissionRepository,
  UnitOfWork,
  WebhookRepository,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, type Layer } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import {
  contactRecord,
  domainEventRecord,
  intakeBotRecord,
  messageRecords,
  submissionRecord
} from "../fixtures-submissions.js"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

type Ports =
  | ContactRepository
  | DeliveryRepository
  | EventOutbox
  | IntakeBotRepository
  | SubmissionRepository
  | UnitOfWork
  | WebhookRepository
  | WorkspaceRepository

export const dispatchSourcesContract = (name: string, theLayer: Layer.Layer<Ports>): void =>
  layer(checkedStores(theLayer))(`DeliveryRepository.dispatchSources contract (${name})`, (it) => {
    it.effect("reads every attempt's endpoint, workspace, event and sources at once; null where gone", () =>
      Effect.gen(function* () {
        const workspace = aWorkspace()
        yield* (yield* WorkspaceRepository).insert(workspace)
        const bot = intakeBotRecord(workspace.id)
        yield* (yield* IntakeBotRepository).insert(bot)
        const submission = submissionRecord(bot)
        const messages = messageRecords(submission, ["Hello", "Hi Ada"])
        yield* (yield* UnitOfWork).transaction((yield* SubmissionRepository).insert(submission, messages))
        const endpoint = aWebhookEndpoint({ workspaceId: workspace.id })
        yield* (yield* WebhookRepository).insertWithinCap(endpoint, 100)
        const completed = domainEventRecord(submission)
        const contact = contactRecord(workspace.id, { email: `${uniqueId("ada")}@example.com` })
        const created = domainEventRecord(submission, { type: "contact.created", contactId: contact.id })
        yield* (yield* UnitOfWork).transaction(
          Effect.zipRight(
            (yield* EventOutbox).append([completed]),
            (yield* ContactRepository).findOrCreateWithEvents(contact, [created])
          )
        )
        const toCompleted = aDelivery({ webhookId: endpoint.id, eventId: completed.id })
        const toCreated = aDelivery({
          webhookId: endpoint.id,
          eventId: created.id,
          eventType: "contact.created"
        })
        const orphan = aDelivery({ webhookId: makeWebhookId(uniqueId("wh")), eventId: uniqueId("evt") })

        const sources = yield* (yield* DeliveryRepository).dispatchSources([toCompleted, toCreated, orphan])
        expect(sources.get(toCompleted.id)).toEqual({
          endpoint,
          workspace,
          event: completed,
          submission: { ...submission, messages },
          bot,
          contact: null
        })
        expect(sources.get(toCreated.id)).toEqual({
          endpoint,
          workspace,
          event: { ...created, contactId: contact.id },
          submission: null,
          bot: null,
          contact
        })
        expect(sources.get(orphan.id)).toEqual({
          endpoint: null,
          workspace: null,
          event: null,
          submission: null,
          bot: null,
          contact: null
        })
      })
    )
  })
