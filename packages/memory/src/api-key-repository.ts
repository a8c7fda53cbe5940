import { type ApiKey, ApiKeyRepository, type EpochMillis, PlanLimitExceeded } from "@intake/domain"
import { Effect, Either, Layer, Option } from "effect"
import { MemoryDatabase, type Tables } from "./database.js"

/** Keys that count toward the cap: not revoked and not expired at `now`. */
const usableKeyCount = (tables: Tables, workspaceId: string, now: EpochMillis): number => {
  let count = 0
  for (const key of tables.apiKeys.values()) {
    if (key.workspaceId !== workspaceId || key.revokedAt !== null) continue
    if (key.expiresAt !== null && key.expiresAt <= now) continue
    count++
  }
  return count
}

export const MemoryApiKeyRepository = Layer.effect(
  ApiKeyRepository,
  Effect.map(MemoryDatabase, (db) => ({
    // One db.run: the count and the insert happen under the database lock, together.
    insertWithinCap: (key: ApiKey, max: number, now: EpochMillis) =>
      db
        .run((t, write) => {
          const current = usableKeyCount(t, key.workspaceId, now)
          if (current >= max) {
            return Either.left(
              new PlanLimitExceeded({
                message: `This workspace's plan allows ${max} API keys.`,
                resource: "api_keys",
                current,
                max
              })
            )
          }
          write.set(t.apiKeys, key.id, key)
          write.set(t.apiKeysByHash, key.keyHash, key.id)
          return Either.void
        })
        .pipe(Effect.flatten),
    findByHash: (keyHash) =>
      db.run((t) =>
        Option.fromNullable(t.apiKeysByHash.get(keyHash)).pipe(
          Option.flatMapNullable((id) => t.apiKeys.get(id))
        )
      ),
    findById: (id) => db.run((t) => Option.fromNullable(t.apiKeys.get(id))),
    revoke: (id, at) =>
      db.run((t, write) => {
        const key = t.apiKeys.get(id)
        if (key === undefined) return Option.none()
        if (key.revokedAt !== null) return Option.some(key)
        const revoked = { ...key, revokedAt: at }
        write.set(t.apiKeys, id, revoked)
        return Option.some(revoked)
      }),
    touchLastUsed: (id, at, minIntervalMs) =>
      db.run((t, write) => {
        const key = t.apiKeys.get(id)
        if (key === undefined) return false
        if (key.lastUsedAt !== null && key.lastUsedAt > at - minIntervalMs) return false
        write.set(t.apiKeys, id, { ...key, lastUsedAt: at })
        return true
      })
  }))
)
