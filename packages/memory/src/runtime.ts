/**
 * Every storage port on one in-memory database: the embedded runtime and the rule tests
 * use it. The summarizer is the domain's built-in one. Crypto, Ids and AddressResolver
 * are the platform's (NodePlatformLive of @intake/node), provided by the composition root.
 */
import { BuiltInSummarizerLive } from "@intake/domain"
import { Layer } from "effect"
import { MemoryAccessInvalidation } from "./access-invalidation.js"
import { MemoryAccessPortsLive } from "./access-ports.js"
import { MemoryDatabase } from "./database.js"
import { MemoryRateLimiter } from "./rate-limiter.js"
import { MemorySubmissionPortsLive } from "./submission-ports.js"
import { MemorySummaryWakeups } from "./summary-jobs.js"
import { MemoryUnitOfWork } from "./unit-of-work.js"
import { MemoryWebhookPortsLive } from "./webhooks.js"

export const MemoryPortsLive = Layer.mergeAll(
  MemoryAccessPortsLive,
  MemorySubmissionPortsLive,
  MemoryWebhookPortsLive,
  MemoryUnitOfWork,
  BuiltInSummarizerLive
).pipe(Layer.provideMerge(MemoryDatabase.Default))

/**
 * What stays in this process beside a database: rate limits, key-cache invalidation and
 * summary wake-ups (the server that queued a job runs it; other processes find it at their
 * next poll). Redis replaces the first two when configured.
 */
export const InProcessLive = Layer.mergeAll(MemoryRateLimiter, MemoryAccessInvalidation, MemorySummaryWakeups)
