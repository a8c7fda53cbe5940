import { type DomainEvent, EventOutbox, type QueuedDeliveries } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase, type Tables, type Writer } from "./database.js"
import { enqueueIn } from "./deliveries.js"

/** The events written with their attempts, as EventOutbox.append stores them. */
export const appendIn = (
  t: Tables,
  w: Writer,
  events: ReadonlyArray<DomainEvent>,
  queued: QueuedDeliveries | undefined
) => {
  for (const event of events) w.set(t.events, event.id, event)
  if (queued !== undefined) enqueueIn(t, w, queued.deliveries, queued.dueAt)
}

export const MemoryEventOutbox = Layer.effect(
  EventOutbox,
  Effect.map(MemoryDatabase, (db) =>
    EventOutbox.of({
      append: (events, queued) => db.run((t, w) => appendIn(t, w, events, queued)),
      findById: (id) => db.run((t) => Option.fromNullable(t.events.get(id)))
    })
  )
)
