/**
 * Every port on one in-memory database: the embedded runtime and the rule tests use it.
 * The summarizer is the domain's built-in one; DNS goes through Node's resolver.
 */
import { BuiltInSummarizerLive } from "@intake/domain"
import { Layer } from "effect"
import { MemoryAccessPortsLive } from "./access-ports.js"
import { MemoryDatabase } from "./database.js"
import { NodeAddressResolver, PlatformLive } from "./platform.js"
import { MemorySubmissionPortsLive } from "./submission-ports.js"
import { MemoryUnitOfWork } from "./unit-of-work.js"
import { MemoryWebhookPortsLive } from "./webhooks.js"

export const MemoryPortsLive = Layer.mergeAll(
  MemoryAccessPortsLive,
  MemorySubmissionPortsLive,
  MemoryWebhookPortsLive,
  MemoryUnitOfWork,
  BuiltInSummarizerLive,
  NodeAddressResolver
).pipe(Layer.provideMerge(PlatformLive), Layer.provideMerge(MemoryDatabase.Default))
