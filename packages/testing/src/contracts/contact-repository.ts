import { expect, layer } from "@effect/vitest"
import { ContactRepository, WorkspaceRepository } from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { contactRecord } from "../fixtures-submissions.js"
import { aWorkspace, uniqueId } from "../records.js"

export const contactRepositoryContract = (
  name: string,
  theLayer: Layer.Layer<ContactRepository | WorkspaceRepository>
): void =>
  layer(theLayer)(`ContactRepository contract (${name})`, (it) => {
    const givenWorkspace = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      return workspace.id
    })

    it.effect("creates a contact the first time, then finds it whatever the email's case", () =>
      Effect.gen(function* () {
        const contacts = yield* ContactRepository
        const workspaceId = yield* givenWorkspace
        const first = contactRecord(workspaceId, { email: "Ada@Example.com" })
        expect(yield* contacts.findOrCreate(first)).toEqual({ contact: first, created: true })
        const again = yield* contacts.findOrCreate(
          contactRecord(workspaceId, { email: "ada@EXAMPLE.COM", name: "Someone else" })
        )
        expect(again).toEqual({ contact: first, created: false })
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
        expect((yield* contacts.findOrCreate(a)).created).toBe(true)
        expect((yield* contacts.findOrCreate(b)).created).toBe(true)
        expect(Option.isNone(yield* contacts.findById(theirs, a.id))).toBe(true)
        expect(Option.isNone(yield* contacts.findById(mine, uniqueId("con")))).toBe(true)
      })
    )

    it.effect("concurrent find-or-create of one email creates one contact", () =>
      Effect.gen(function* () {
        const contacts = yield* ContactRepository
        const workspaceId = yield* givenWorkspace
        const results = yield* Effect.all(
          Array.from({ length: 10 }, (_, i) =>
            contacts.findOrCreate(
              contactRecord(workspaceId, { email: i % 2 ? "grace@example.com" : "GRACE@example.com" })
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(results.filter((result) => result.created)).toHaveLength(1)
        expect(new Set(results.map((result) => result.contact.id)).size).toBe(1)
      })
    )
  })
