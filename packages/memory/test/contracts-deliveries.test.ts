import { deliveryRepositoryContract } from "@intake/testing"
import { Layer } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemoryDeliveryRepository } from "../src/deliveries.js"
import { MemoryEventOutbox } from "../src/event-outbox.js"
import { MemoryUnitOfWork } from "../src/unit-of-work.js"
import { MemoryWebhookRepository } from "../src/webhooks.js"

deliveryRepositoryContract(
  "memory",
  Layer.mergeAll(MemoryDeliveryRepository, MemoryWebhookRepository, MemoryEventOutbox, MemoryUnitOfWork).pipe(
    Layer.provide(MemoryDatabase.Default)
  )
)
