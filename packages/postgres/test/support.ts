/** What the test files of this package share. */

import { SqlClient } from "@effect/sql"
import { afterAll, describe } from "@effect/vitest"
import type {
  ApiKeyRepository,
  ContactRepository,
  DeliveryRepository,
  EventOutbox,
  IdempotencyStore,
  IntakeBotRepository,
  SubmissionRepository,
  SummaryJobRepository,
  UnitOfWork,
  UsageCounters,
  WebhookRepository,
  WorkspaceRepository
} from "@intake/domain"
import {
  apiKeyRepositoryContract,
  contactRepositoryContract,
  deliveryLogContract,
  deliveryRepositoryContract,
  dispatchSourcesContract,
  eventOutboxContract,
  idempotencyStoreContract,
  intakeBotRepositoryContract,
  submissionRepositoryContract,
  summaryJobRepositoryContract,
  usageCountersContract,
  webhookRepositoryContract,
  workspaceRepositoryContract
} from "@intake/testing"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import { probeTestServer, testServerUrl } from "../src/testing.js"

/**
 * Whether the tests that need the real PostgreSQL run. Under CI a missing server fails
 * the run; elsewhere those tests are skipped with a message saying why.
 */
export const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(
    `${message}: skipping the tests on the real PostgreSQL. Set INTAKE_TEST_DATABASE_URL to run them.`
  )
  return false
})()

/** `describe` for tests on the real PostgreSQL: skipped (outside CI) when it is unreachable. */
export const describePostgres: typeof describe = postgresAvailable
  ? describe
  : (describe.skip as typeof describe)

/**
 * One build of `layer` for the whole file, released after its last test: PGlite takes
 * seconds to start, and the suites of one file can share a database (their ids are unique).
 */
export const sharedLayer = <A, E>(layer: Layer.Layer<A, E>): Layer.Layer<A> => {
  const scope = Effect.runSync(Scope.make())
  let built: Promise<Context.Context<A>> | undefined
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return Layer.effectContext(
    Effect.promise(() => {
      built ??= Effect.runPromise(Layer.buildWithScope(layer, scope))
      return built
    })
  )
}

/** Every port contract of the storage adapters, on one layer of repositories. */
export const storageContracts = (
  name: string,
  ports: Layer.Layer<
    | WorkspaceRepository
    | ApiKeyRepository
    | IntakeBotRepository
    | SubmissionRepository
    | UsageCounters
    | ContactRepository
    | EventOutbox
    | DeliveryRepository
    | WebhookRepository
    | IdempotencyStore
    | UnitOfWork
  >
): void => {
  workspaceRepositoryContract(name, ports)
  apiKeyRepositoryContract(name, ports)
  intakeBotRepositoryContract(name, ports)
  submissionRepositoryContract(name, ports)
  usageCountersContract(name, ports)
  contactRepositoryContract(name, ports)
  eventOutboxContract(name, ports)
  webhookRepositoryContract(name, ports)
  idempotencyStoreContract(name, ports)
  deliveryLogContract(name, ports)
  dispatchSourcesContract(name, ports)
}

/**
 * The DeliveryRepository contract on a shared database: its queue is global, so each
 * test starts from an empty `deliveries` table (the tests of a file run one by one).
 */
export const deliveryContract = (
  name: string,
  ports: Layer.Layer<
    | DeliveryRepository
    | WebhookRepository
    | EventOutbox
    | SummaryJobRepository
    | UnitOfWork
    | SqlClient.SqlClient
  >
): void => {
  deliveryRepositoryContract(
    name,
    Layer.effectDiscard(
      Effect.orDie(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM deliveries`))
    ).pipe(Layer.provideMerge(ports))
  )
  // The summary job queue is global too.
  summaryJobRepositoryContract(
    name,
    Layer.effectDiscard(
      Effect.orDie(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM summary_jobs`))
    ).pipe(Layer.provideMerge(ports))
  )
}
