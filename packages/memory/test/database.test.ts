import { describe, expect, it } from "@effect/vitest"
import { makeWorkspaceId } from "@intake/domain"
import { Effect, Fiber } from "effect"
import { MemoryDatabase } from "../src/database.js"

const putWorkspaceName = (db: MemoryDatabase, id: string, name: string) =>
  db.run((t, w) =>
    w.set(t.workspaces, id, {
      id: makeWorkspaceId(id),
      name,
      plan: "pro",
      status: "active",
      monthlySubmissionQuota: null,
      rateLimitPerMinute: null,
      createdAt: 0,
      updatedAt: 0
    })
  )
const nameOf = (db: MemoryDatabase, id: string) => db.run((t) => t.workspaces.get(id)?.name)

describe("MemoryDatabase", () => {
  it.effect("a failed transaction leaves no write behind", () =>
    Effect.gen(function* () {
      const db = yield* MemoryDatabase
      yield* putWorkspaceName(db, "ws_1", "before")
      const result = yield* db
        .transaction(
          Effect.gen(function* () {
            yield* putWorkspaceName(db, "ws_1", "changed")
            yield* putWorkspaceName(db, "ws_2", "new")
            return yield* Effect.fail("boom" as const)
          })
        )
        .pipe(Effect.flip)
      expect(result).toBe("boom")
      expect(yield* nameOf(db, "ws_1")).toBe("before")
      expect(yield* nameOf(db, "ws_2")).toBeUndefined()
    }).pipe(Effect.provide(MemoryDatabase.Default))
  )

  it.effect("a nested transaction is part of the outer one: the outer's failure undoes its writes", () =>
    Effect.gen(function* () {
      const db = yield* MemoryDatabase
      const failed = yield* db
        .transaction(
          Effect.gen(function* () {
            yield* db.transaction(putWorkspaceName(db, "ws_1", "inner"))
            return yield* Effect.fail("no" as const)
          })
        )
        .pipe(Effect.flip)
      expect(failed).toBe("no")
      expect(yield* nameOf(db, "ws_1")).toBeUndefined()
    }).pipe(Effect.provide(MemoryDatabase.Default))
  )

  it.effect("an interrupted transaction is undone and releases the lock", () =>
    Effect.gen(function* () {
      const db = yield* MemoryDatabase
      const fiber = yield* Effect.fork(
        db.transaction(Effect.zipRight(putWorkspaceName(db, "ws_1", "x"), Effect.never))
      )
      yield* Effect.yieldNow()
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      expect(yield* nameOf(db, "ws_1")).toBeUndefined()
      yield* db.transaction(putWorkspaceName(db, "ws_1", "after"))
      expect(yield* nameOf(db, "ws_1")).toBe("after")
    }).pipe(Effect.provide(MemoryDatabase.Default))
  )

  it.effect("transactions are serialized: concurrent read-modify-write loses no update", () =>
    Effect.gen(function* () {
      const db = yield* MemoryDatabase
      yield* db.run((t, w) => w.set(t.submissionUsage, "ws|2026-11", 0))
      const increment = db.transaction(
        Effect.gen(function* () {
          const current = yield* db.run((t) => t.submissionUsage.get("ws|2026-11") ?? 0)
          yield* Effect.yieldNow()
          yield* db.run((t, w) => w.set(t.submissionUsage, "ws|2026-11", current + 1))
        })
      )
      yield* Effect.all(
        Array.from({ length: 50 }, () => increment),
        { concurrency: "unbounded" }
      )
      expect(yield* db.run((t) => t.submissionUsage.get("ws|2026-11"))).toBe(50)
    }).pipe(Effect.provide(MemoryDatabase.Default))
  )
})
