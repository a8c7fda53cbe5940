import { ContactEvents, ContactRepository } from "@intake/domain/internal"
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
          const stored = ContactEvents.eventsForContact(events, queued, contact.id, existing === undefined)
          appendIn(t, w, stored.events, stored.queued)
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
