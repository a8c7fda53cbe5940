/**
 * The bots that API reads need (GET one bot, a bot's submissions), kept in-process for at
 * most a minute, so a warm read of a bot costs no query: a bot changes rarely, and only
 * through IntakeBots.update, which drops it here at once and tells the other instances
 * through AccessInvalidation (docs/choices.md, "Caches"). A lost message is bounded by the
 * TTL. Creating a submission does not read through the cache: its checks (status, schema
 * version) read the bot as stored.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AccessInvalidation } from "../access/ports.js"
import type { StorageUnavailable } from "../shared/errors.js"
import type { IntakeBotId, WorkspaceId } from "../shared/ids.js"
import type { EpochMillis, IntakeBot } from "../shared/models.js"
import { IntakeBotRepository } from "./ports.js"

export const BOT_CACHE_TTL_MS = 60_000
/** Entries beyond this evict the oldest, so reads of many bots cannot grow the cache. */
export const BOT_CACHE_MAX_ENTRIES = 10_000

export class IntakeBotCache extends Context.Tag("@intake/IntakeBotCache")<
  IntakeBotCache,
  {
    /** The workspace's bot (none for another workspace's), from the cache while it is fresh. */
    readonly findInWorkspace: (
      workspaceId: WorkspaceId,
      id: IntakeBotId
    ) => Effect.Effect<Option.Option<IntakeBot>, StorageUnavailable>
    /** After a change to the bot is stored: drops it here and on every other instance. */
    readonly changed: (id: IntakeBotId) => Effect.Effect<void>
  }
>() {}

interface Entry {
  readonly bot: IntakeBot
  readonly cachedAt: EpochMillis
}

export const IntakeBotCacheLive = Layer.scoped(
  IntakeBotCache,
  Effect.gen(function* () {
    const bots = yield* IntakeBotRepository
    // Optional so that a use case's tests need not wire it; every runtime provides it.
    const invalidation = yield* Effect.serviceOption(AccessInvalidation)
    const cache = new Map<string, Entry>()
    // Bumped by every invalidation: a read that started before one must not cache what it read.
    let generation = 0
    const drop = (id: IntakeBotId) => {
      generation++
      cache.delete(id)
    }
    if (Option.isSome(invalidation)) {
      yield* invalidation.value.subscribe((event) =>
        Effect.sync(() => {
          if (event._tag === "IntakeBotChanged") drop(event.intakeBotId)
        })
      )
    }

    const remember = (id: IntakeBotId, entry: Entry) => {
      cache.delete(id)
      cache.set(id, entry)
      if (cache.size > BOT_CACHE_MAX_ENTRIES) {
        const oldest = cache.keys().next()
        if (!oldest.done) cache.delete(oldest.value)
      }
    }

    const inWorkspace = (workspaceId: WorkspaceId, bot: IntakeBot) =>
      bot.workspaceId === workspaceId ? Option.some(bot) : Option.none()

    return IntakeBotCache.of({
      findInWorkspace: (workspaceId, id) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = cache.get(id)
          if (cached !== undefined && now < cached.cachedAt + BOT_CACHE_TTL_MS) {
            return Effect.succeed(inWorkspace(workspaceId, cached.bot))
          }
          const startedIn = generation
          return Effect.map(bots.findById(id), (found) => {
            if (Option.isNone(found)) return found
            if (startedIn === generation) remember(id, { bot: found.value, cachedAt: now })
            return inWorkspace(workspaceId, found.value)
          })
        }),
      changed: (id) =>
        Option.isSome(invalidation)
          ? invalidation.value.publish({ _tag: "IntakeBotChanged", intakeBotId: id })
          : Effect.sync(() => drop(id))
    })
  })
)
