import { EventOutbox } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"
import { enqueueIn } from "./deliveries.js"

export const MemoryEventOutbox = Layer.effect(
  EventOutbox,
  Effect.map(MemoryDatabase, (db) =>
    EventOutbox.of({
      append: (events, queued) =>
        db.run((t, w) => {
          for (const event of events) w.set(t.events, event.id, event)
          if (queued !== undefined) enqueueIn(t, w, queued.deliveries, queued.dueAt)
        }),
      findById: (id) => db.run((t) => Option.fromNullable(t.events.get(id)))
    })
  )
)
