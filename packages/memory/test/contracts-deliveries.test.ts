import { deliveryRepositoryContract } from "@intake/testing"
import { Layer } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemoryDeliveryRepository } from "../src/deliveries.js"
import { MemoryUnitOfWork } from "../src/unit-of-work.js"
import { MemoryWebhookRepository } from "../src/webhooks.js"

deliveryRepositoryContract(
  "memory",
  Layer.mergeAll(MemoryDeliveryRepository, MemoryWebhookRepository, MemoryUnitOfWork).pipe(
    Layer.provide(MemoryDatabase.Default)
  )
)
