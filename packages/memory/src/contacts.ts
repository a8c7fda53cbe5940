import { ContactRepository } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"
import { appendIn } from "./event-outbox.js"

const emailKey = (workspaceId: string, email: string) => `${workspaceId}|${email.toLowerCase()}`

export const MemoryContactRepository = Layer.effect(
  ContactRepository,
  Effect.map(MemoryDatabase, (db) =>
    ContactRepository.of({
      findOrCreateWithEvents: (candidate, events, queued) =>
        db.run((t, w) => {
          const key = emailKey(candidate.workspaceId, candidate.email)
          const existing = t.contacts.get(t.contactsByEmail.get(key) ?? "")
          const contact = existing ?? candidate
          if (existing === undefined) {
            w.set(t.contacts, candidate.id, candidate)
            w.set(t.contactsByEmail, key, candidate.id)
          }
          // A known contact gets no contact.created, nor its attempts.
          const kept =
            existing === undefined ? events : events.filter((event) => event.type !== "contact.created")
          const keptIds = new Set(kept.map((event) => event.id))
          appendIn(
            t,
            w,
            kept.map((event) => ({ ...event, contactId: contact.id })),
            queued && {
              deliveries: queued.deliveries.filter((delivery) => keptIds.has(delivery.eventId)),
              dueAt: queued.dueAt
            }
          )
        }),
      findById: (workspaceId, id) =>
        db.run((t) =>
          Option.filter(
            Option.fromNullable(t.contacts.get(id)),
            (contact) => contact.workspaceId === workspaceId
          )
        )
    })
  )
)
