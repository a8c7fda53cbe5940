import { ContactRepository } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"

const emailKey = (workspaceId: string, email: string) => `${workspaceId}|${email.toLowerCase()}`

export const MemoryContactRepository = Layer.effect(
  ContactRepository,
  Effect.map(MemoryDatabase, (db) =>
    ContactRepository.of({
      findOrCreate: (candidate) =>
        db.run((t, w) => {
          const key = emailKey(candidate.workspaceId, candidate.email)
          const existing = t.contacts.get(t.contactsByEmail.get(key) ?? "")
          if (existing !== undefined) return { contact: existing, created: false }
          w.set(t.contacts, candidate.id, candidate)
          w.set(t.contactsByEmail, key, candidate.id)
          return { contact: candidate, created: true }
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
