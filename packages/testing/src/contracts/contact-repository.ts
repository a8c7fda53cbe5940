import { expect, layer } from "@effect/vitest"
import {
  type Contact,
  ContactRepository,
  DeliveryRepository,
  type DomainEvent,
  EventOutbox,
  makeWebhookId,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import {
  contactRecord,
  domainEventRecord,
  intakeBotRecord,
  submissionRecord
} from "../fixtures-submissions.js"
import { aWorkspace, uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

export const contactRepositoryContract = (
  name: string,
  theLayer: Layer.Layer<ContactRepository | EventOutbox | DeliveryRepository | WorkspaceRepository>
): void =>
  layer(checkedStores(theLayer))(`ContactRepository contract (${name})`, (it) => {
    const givenWorkspace = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      return workspace.id
    })

    /** A submission's two events as a create makes them, naming the candidate contact. */
    const eventsFor = (candidate: Contact) => {
      const submission = submissionRecord(intakeBotRecord(candidate.workspaceId))
      return {
        // Raised by a request: its id is stored with each event (docs/operations.md, Request ids).
        completed: domainEventRecord(submission, { contactId: candidate.id, requestId: "client-trace.7" }),
        created: domainEventRecord(submission, {
          type: "contact.created",
          contactId: candidate.id,
          requestId: "client-trace.7"
        })
      }
    }

    const storedEvent = (id: string) =>
      Effect.flatMap(EventOutbox, (outbox) => outbox.findById(id)).pipe(Effect.map(Option.getOrNull))

    const namedContact = (event: DomainEvent) =>
      Effect.map(storedEvent(event.id), (stored) => stored?.contactId)

    it.effect(
      "creates a contact the first time with its events, then finds it whatever the email's case",
      () =>
        Effect.gen(function* () {
          const contacts = yield* ContactRepository
          const workspaceId = yield* givenWorkspace
          const first = contactRecord(workspaceId, { email: "Ada@Example.com" })
          const firstEvents = eventsFor(first)
          yield* contacts.findOrCreateWithEvents(first, [firstEvents.completed, firstEvents.created])
          expect(yield* contacts.findById(workspaceId, first.id)).toEqual(Option.some(first))
          expect(yield* storedEvent(firstEvents.completed.id)).toEqual(firstEvents.completed)
          expect(yield* storedEvent(firstEvents.created.id)).toEqual(firstEvents.created)

          const again = contactRecord(workspaceId, { email: "ada@EXAMPLE.COM", name: "Someone else" })
          const againEvents = eventsFor(again)
          yield* contacts.findOrCreateWithEvents(again, [againEvents.completed, againEvents.created])
          // The events name the contact found; it was not created again.
          expect(yield* storedEvent(againEvents.completed.id)).toEqual({
            ...againEvents.completed,
            contactId: first.id
          })
          expect(yield* storedEvent(againEvents.created.id)).toBeNull()
          expect(Option.isNone(yield* contacts.findById(workspaceId, again.id))).toBe(true)
          expect(yield* contacts.findById(workspaceId, first.id)).toEqual(Option.some(first))
        })
    )

    it.effect("contacts of different workspaces are separate", () =>
      Effect.gen(function* () {
        const contacts = yield* ContactRepository
        const mine = yield* givenWorkspace
        const theirs = yield* givenWorkspace
        const a = contactRecord(mine)
        const b = contactRecord(theirs)
        const aEvents = eventsFor(a)
        const bEvents = eventsFor(b)
        yield* contacts.findOrCreateWithEvents(a, [aEvents.completed, aEvents.created])
        yield* contacts.findOrCreateWithEvents(b, [bEvents.completed, bEvents.created])
        expect(yield* namedContact(bEvents.completed)).toBe(b.id)
        expect(yield* storedEvent(bEvents.created.id)).toEqual(bEvents.created)
        expect(Option.isNone(yield* contacts.findById(theirs, a.id))).toBe(true)
        expect(Option.isNone(yield* contacts.findById(mine, uniqueId("con")))).toBe(true)
      })
    )

    it.effect("attempts of contact.created are queued only with a new contact", () =>
      Effect.gen(function* () {
        const contacts = yield* ContactRepository
        const deliveries = yield* DeliveryRepository
        const workspaceId = yield* givenWorkspace
        const webhookId = uniqueId("wh")
        const recorded = (candidate: Contact) => {
          const { completed, created } = eventsFor(candidate)
          const attempts = [completed, created].map((event) =>
            aDelivery({
              webhookId: makeWebhookId(webhookId),
              eventId: event.id,
              eventType: event.type,
              createdAt: event.createdAt
            })
          )
          return Effect.as(
            contacts.findOrCreateWithEvents(candidate, [completed, created], {
              deliveries: attempts,
              dueAt: completed.createdAt
            }),
            { completed, created, attempts }
          )
        }
        const fresh = yield* recorded(contactRecord(workspaceId, { email: "lin@example.com" }))
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), fresh.completed.id)).toEqual([
          fresh.attempts[0]
        ])
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), fresh.created.id)).toEqual([
          fresh.attempts[1]
        ])

        const known = yield* recorded(contactRecord(workspaceId, { email: "LIN@example.com" }))
        expect(yield* namedContact(known.completed)).toBe(fresh.completed.contactId)
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), known.completed.id)).toEqual([
          known.attempts[0]
        ])
        expect(yield* deliveries.attemptsOf(makeWebhookId(webhookId), known.created.id)).toEqual([])
        expect(yield* storedEvent(known.created.id)).toBeNull()
      })
    )

    it.effect("concurrent calls for one email create one contact, which all their events name", () =>
      Effect.gen(function* () {
        const contacts = yield* ContactRepository
        const workspaceId = yield* givenWorkspace
        const calls = Array.from({ length: 10 }, (_, i) => {
          const candidate = contactRecord(workspaceId, {
            email: i % 2 ? "grace@example.com" : "GRACE@example.com"
          })
          return { candidate, ...eventsFor(candidate) }
        })
        yield* Effect.all(
          calls.map(({ candidate, completed, created }) =>
            contacts.findOrCreateWithEvents(candidate, [completed, created])
          ),
          { concurrency: "unbounded" }
        )
        const createdEvents = yield* Effect.forEach(calls, ({ created }) => storedEvent(created.id))
        const stored = createdEvents.filter((event) => event !== null)
        expect(stored).toHaveLength(1)
        const contactId = stored[0]?.contactId ?? ""
        expect(Option.isSome(yield* contacts.findById(workspaceId, contactId))).toBe(true)
        const named = yield* Effect.forEach(calls, ({ completed }) => namedContact(completed))
        expect(named).toEqual(calls.map(() => contactId))
      })
    )
  })
