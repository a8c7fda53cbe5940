import { summaryJobRepositoryContract } from "@intake/testing"
import { Layer } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemorySummaryJobRepository } from "../src/summary-jobs.js"
import { MemoryUnitOfWork } from "../src/unit-of-work.js"

summaryJobRepositoryContract(
  "memory",
  Layer.merge(MemorySummaryJobRepository, MemoryUnitOfWork).pipe(Layer.provide(MemoryDatabase.Default))
)
