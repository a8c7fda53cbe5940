/**
 * The memory adapters of the access area in one layer: WorkspaceRepository,
 * ApiKeyRepository, RateLimiter and AccessInvalidation. Requires MemoryDatabase (provide
 * one instance for the whole runtime). AccessLive additionally needs Crypto, and
 * ProvisioningLive needs Crypto, Ids and UnitOfWork (PlatformLive, MemoryUnitOfWork).
 */
import { Layer } from "effect"
import { MemoryAccessInvalidation } from "./access-invalidation.js"
import { MemoryApiKeyRepository } from "./api-key-repository.js"
import { MemoryRateLimiter } from "./rate-limiter.js"
import { MemoryWorkspaceRepository } from "./workspace-repository.js"

export const MemoryAccessPortsLive = Layer.mergeAll(
  MemoryWorkspaceRepository,
  MemoryApiKeyRepository,
  MemoryRateLimiter,
  MemoryAccessInvalidation
)
