import { UnitOfWork } from "@intake/domain"
import { Effect, Layer } from "effect"
import { MemoryDatabase } from "./database.js"

export const MemoryUnitOfWork = Layer.effect(
  UnitOfWork,
  // A memory unit of work commits when its effect ends: its last step needs nothing more.
  Effect.map(MemoryDatabase, (db) => ({ transaction: db.transaction, commitWith: (step) => step }))
)
