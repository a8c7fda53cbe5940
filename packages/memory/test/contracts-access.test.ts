import { apiKeyRepositoryContract, rateLimiterContract, workspaceRepositoryContract } from "@intake/testing"
import { Layer } from "effect"
import { MemoryApiKeyRepository } from "../src/api-key-repository.js"
import { MemoryDatabase } from "../src/database.js"
import { MemoryRateLimiter } from "../src/rate-limiter.js"
import { MemoryWorkspaceRepository } from "../src/workspace-repository.js"

workspaceRepositoryContract("memory", MemoryWorkspaceRepository.pipe(Layer.provide(MemoryDatabase.Default)))

apiKeyRepositoryContract(
  "memory",
  Layer.merge(MemoryApiKeyRepository, MemoryWorkspaceRepository).pipe(Layer.provide(MemoryDatabase.Default))
)

// Reads the fiber's Clock, so the suite's default TestClock drives the window.
rateLimiterContract("memory", MemoryRateLimiter)
