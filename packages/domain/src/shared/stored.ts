import type { Effect } from "effect"
import type { StorageUnavailable } from "./errors.js"

/** What a port answers: its value, its own failures, or StorageUnavailable (ports.ts). */
export type Stored<A, E = never> = Effect.Effect<A, E | StorageUnavailable>

/** The failures a use case declares, StorageUnavailable among them. */
export type Fails<E = never> = E | StorageUnavailable
