import { Layer } from "effect"
import { MemoryContactRepository } from "./contacts.js"
import { MemoryDeliveryPortsLive } from "./deliveries.js"
import { MemoryEventOutbox } from "./event-outbox.js"
import { MemoryIntakeBotRepository } from "./intake-bots.js"
import { MemorySubmissionRepository } from "./submissions.js"
import { MemorySummaryPortsLive } from "./summary-jobs.js"
import { MemoryUsageCounters } from "./usage-counters.js"

/**
 * The ports of bots, submissions, quotas, contacts, the outbox, the delivery queue and the
 * summary jobs (events queue their attempts in the same unit of work), over one MemoryDatabase.
 */
export const MemorySubmissionPortsLive = Layer.mergeAll(
  MemoryDeliveryPortsLive,
  MemoryIntakeBotRepository,
  MemorySubmissionRepository,
  MemoryUsageCounters,
  MemoryContactRepository,
  MemoryEventOutbox,
  MemorySummaryPortsLive
)
