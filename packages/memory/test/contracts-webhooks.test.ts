import { idempotencyStoreContract, webhookRepositoryContract } from "@intake/testing"
import { Layer } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemoryUnitOfWork } from "../src/unit-of-work.js"
import { MemoryIdempotencyStore, MemoryWebhookRepository } from "../src/webhooks.js"

const withDatabase = <A>(ports: Layer.Layer<A, never, MemoryDatabase>) =>
  Layer.merge(ports, MemoryUnitOfWork).pipe(Layer.provide(MemoryDatabase.Default))

webhookRepositoryContract("memory", withDatabase(MemoryWebhookRepository))
idempotencyStoreContract("memory", withDatabase(MemoryIdempotencyStore))
