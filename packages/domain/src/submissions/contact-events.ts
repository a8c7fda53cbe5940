/**
 * What ContactRepository.findOrCreateWithEvents stores once it knows the contact: the events
 * naming that contact, and for a contact that was there already no contact.created, nor its
 * attempts. Every store applies it (memory, and PostgreSQL where the attempts are queued).
 */
import type { DomainEvent } from "../shared/models.js"
import type { QueuedDeliveries } from "./ports.js"

export const eventsForContact = (
  events: ReadonlyArray<DomainEvent>,
  queued: QueuedDeliveries | undefined,
  contactId: string,
  created: boolean
): { readonly events: ReadonlyArray<DomainEvent>; readonly queued: QueuedDeliveries | undefined } => {
  const kept = created ? events : events.filter((event) => event.type !== "contact.created")
  const keptIds = new Set(kept.map((event) => event.id))
  return {
    events: kept.map((event) => ({ ...event, contactId })),
    queued: queued && {
      deliveries: queued.deliveries.filter((delivery) => keptIds.has(delivery.eventId)),
      dueAt: queued.dueAt
    }
  }
}
