/**
 * The database variables the server and the worker both read (docs/deploy-postgres.md):
 * DATABASE_URL, DATABASE_POOL_MODE and DATABASE_DIRECT_URL. A bad value fails at start with
 * the variable's name.
 */
import { Config, ConfigError, Either, Option, Redacted } from "effect"
import type { PoolMode } from "./driver/direct-pool.js"
import type { PostgresConfig } from "./pg-pool.js"

export interface DatabaseSettings {
  /** DATABASE_URL: PostgreSQL, or a pooler in front of it (none: the embedded database, or no worker). */
  readonly url: Option.Option<Redacted.Redacted>
  /** DATABASE_POOL_MODE: `session` (default; PostgreSQL itself, or a session-mode pooler) or `transaction`. */
  readonly poolMode: PoolMode
  /** DATABASE_DIRECT_URL: straight to PostgreSQL, for LISTEN and the migrations; required in transaction mode. */
  readonly directUrl: Option.Option<Redacted.Redacted>
}

/** A secret variable, unset when empty. */
const optionalSecret = (name: string) =>
  Config.option(Config.redacted(name)).pipe(
    Config.map(Option.filter((value) => Redacted.value(value).trim() !== ""))
  )

const poolMode: Config.Config<PoolMode> = Config.string("DATABASE_POOL_MODE").pipe(
  Config.withDefault("session"),
  Config.mapOrFail((text) => {
    const mode = text.trim().toLowerCase()
    return mode === "session" || mode === "transaction"
      ? Either.right(mode)
      : Either.left(
          ConfigError.InvalidData(["DATABASE_POOL_MODE"], `expected session or transaction, got "${text}"`)
        )
  })
)

/** DATABASE_URL, DATABASE_POOL_MODE and DATABASE_DIRECT_URL, checked together. */
export const databaseSettings: Config.Config<DatabaseSettings> = Config.all({
  url: optionalSecret("DATABASE_URL"),
  poolMode,
  directUrl: optionalSecret("DATABASE_DIRECT_URL")
}).pipe(
  Config.mapOrFail((settings) =>
    // LISTEN holds a session for as long as it listens: through a transaction-mode pooler
    // its notifications would stop at the first other client's transaction on that session.
    settings.poolMode === "transaction" && Option.isSome(settings.url) && Option.isNone(settings.directUrl)
      ? Either.left(
          ConfigError.InvalidData(
            ["DATABASE_DIRECT_URL"],
            "required when DATABASE_POOL_MODE=transaction: LISTEN and the migrations need a connection straight to PostgreSQL"
          )
        )
      : Either.right(settings)
  )
)

/** The pool's settings for `url`: its pool mode and direct URL as the variables give them. */
export const poolSettings = (
  settings: Pick<DatabaseSettings, "poolMode" | "directUrl">
): Pick<PostgresConfig, "poolMode" | "directUrl"> => ({
  poolMode: settings.poolMode,
  ...(Option.isSome(settings.directUrl) ? { directUrl: settings.directUrl.value } : {})
})
