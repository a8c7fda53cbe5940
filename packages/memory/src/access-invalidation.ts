/**
 * AccessInvalidation for a single process: `publish` runs every subscriber before it
 * returns. A shared transport (Redis pub/sub) implements the same port across instances.
 */
import { AccessInvalidation, type AccessInvalidationEvent } from "@intake/domain"
import { Effect, Layer } from "effect"

type Handler = (event: AccessInvalidationEvent) => Effect.Effect<void>

export const MemoryAccessInvalidation = Layer.sync(AccessInvalidation, () => {
  const handlers = new Set<Handler>()
  return {
    publish: (event) => Effect.forEach(handlers, (handler) => handler(event), { discard: true }),
    subscribe: (handler) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          // A fresh wrapper per registration, so the same function may subscribe twice.
          const registered: Handler = (event) => handler(event)
          handlers.add(registered)
          return registered
        }),
        (registered) => Effect.sync(() => handlers.delete(registered))
      ).pipe(Effect.asVoid)
  }
})
