/**
 * The store as the server itself sees it (not through a port): whether it answers, for
 * /readyz, and whether it is empty, for the demo seed. The in-memory store always answers
 * and always starts empty, which is this reference's default.
 */
import type { StorageUnavailable } from "@intake/domain"
import { Context, Effect } from "effect"

export class StoreStatus extends Context.Reference<StoreStatus>()("@intake/server/StoreStatus", {
  defaultValue: (): {
    readonly ping: Effect.Effect<void, StorageUnavailable>
    readonly isEmpty: Effect.Effect<boolean, StorageUnavailable>
    /** Where the data lives, for the start banner. */
    readonly description: string
  } => ({ ping: Effect.void, isEmpty: Effect.succeed(true), description: "embedded in-memory store" })
}) {}
