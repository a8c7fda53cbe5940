import { UnitOfWork } from "@intake/domain"
import { Effect, Layer } from "effect"
import { MemoryDatabase } from "./database.js"

export const MemoryUnitOfWork = Layer.effect(
  UnitOfWork,
  Effect.map(MemoryDatabase, (db) => ({ transaction: db.transaction }))
)
