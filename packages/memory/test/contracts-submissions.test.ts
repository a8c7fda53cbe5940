import {
  contactRepositoryContract,
  deliveryLogContract,
  dispatchSourcesContract,
  eventOutboxContract,
  intakeBotRepositoryContract,
  submissionRepositoryContract,
  usageCountersContract
} from "@intake/testing"
import { Layer } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemorySubmissionPortsLive } from "../src/submission-ports.js"
import { MemoryUnitOfWork } from "../src/unit-of-work.js"
import { MemoryWebhookRepository } from "../src/webhooks.js"
import { MemoryWorkspaceRepository } from "../src/workspace-repository.js"

const memory = () =>
  Layer.mergeAll(MemorySubmissionPortsLive, MemoryWorkspaceRepository, MemoryWebhookRepository).pipe(
    Layer.provide(MemoryDatabase.Default)
  )

intakeBotRepositoryContract("memory", memory())
submissionRepositoryContract("memory", memory())
usageCountersContract("memory", memory())
contactRepositoryContract("memory", memory())
eventOutboxContract("memory", memory())
deliveryLogContract("memory", memory())
dispatchSourcesContract(
  "memory",
  Layer.merge(memory(), MemoryUnitOfWork.pipe(Layer.provide(MemoryDatabase.Default)))
)
