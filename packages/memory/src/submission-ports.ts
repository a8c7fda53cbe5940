import { Layer } from "effect"
import { MemoryContactRepository } from "./contacts.js"
import { MemoryEventOutbox } from "./event-outbox.js"
import { MemoryIntakeBotRepository } from "./intake-bots.js"
import { MemorySubmissionRepository } from "./submissions.js"
import { MemoryUsageCounters } from "./usage-counters.js"

/** The ports of bots, submissions, quotas, contacts and the outbox, over one MemoryDatabase. */
export const MemorySubmissionPortsLive = Layer.mergeAll(
  MemoryIntakeBotRepository,
  MemorySubmissionRepository,
  MemoryUsageCounters,
  MemoryContactRepository,
  MemoryEventOutbox
)
