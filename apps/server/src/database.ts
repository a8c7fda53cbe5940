/**
 * The store as the server itself sees it (not through a port): whether it is empty, for
 * the demo seed, and how to name it. The in-memory store always starts empty, which is this
 * reference's default. Whether it answers is DatabaseState's (@intake/delivery).
 */
import type { StorageUnavailable } from "@intake/domain"
import { Context, Effect } from "effect"

export class StoreStatus extends Context.Reference<StoreStatus>()("@intake/server/StoreStatus", {
  defaultValue: (): {
    readonly isEmpty: Effect.Effect<boolean, StorageUnavailable>
    /** Where the data lives, for the start banner. */
    readonly description: string
  } => ({ isEmpty: Effect.succeed(true), description: "embedded in-memory store" })
}) {}
