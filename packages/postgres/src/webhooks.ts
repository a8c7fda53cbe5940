/**
 * Webhook endpoints and the idempotency store on Postgres.
 * Statement style: the hot path (the idempotency store's claim and stored response) as named prepared statements on `pg` (driver/statement-steps.ts, `statement` or { text, values } for texts built once), where `@effect/sql` cost as much CPU again (docs/performance.md, "Statements on pg"); everything else through `@effect/sql`'s sql`...`.
 */
import { SqlClient } from "@effect/sql"
import {
  type IdempotencyClaim,
  IdempotencyClaimNotFresh,
  IdempotencyConflict,
  IdempotencyRecordExists,
  type IdempotencyScope,
  IdempotencyStore,
  type PageRequest,
  PlanLimitExceeded,
  type StoredResponse,
  type WebhookEndpoint,
  WebhookRepository
} from "@intake/domain"
import { Effect, Exit, Layer, Option } from "effect"
import { statement } from "./driver/statement.js"
import { statementSteps } from "./driver/statement-steps.js"
import { IDEMPOTENCY_CLAIM_NOT_FRESH_SQLSTATE, IDEMPOTENCY_RECORD_EXISTS_SQLSTATE } from "./migrations.js"
import { afterPosition, pageFrom } from "./paging.js"
import type { CurrentRow, IdRow, WebhookEndpointRow } from "./rows.js"
import {
  fromJson,
  hasSqlState,
  purgedInBatches,
  type Row,
  stored,
  toDate,
  toDateOrNull,
  toMillis,
  toMillisOrNull,
  toNumber
} from "./storage.js"

/** A page of a workspace's webhook endpoints, newest first. */
export const listWebhooksQuery = (sql: SqlClient.SqlClient, workspaceId: string, page: PageRequest) =>
  sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints w
    WHERE ${sql.and([sql`w.workspace_id = ${workspaceId}`, ...afterPosition(sql, "w", page.after)])}
    ORDER BY w.created_at DESC, w.id DESC
    LIMIT ${page.limit + 1}`

export const endpointFromRow = (row: WebhookEndpointRow): WebhookEndpoint => ({
  id: row.id,
  workspaceId: row.workspace_id,
  url: row.url,
  events: fromJson<WebhookEndpoint["events"]>(row.events),
  status: row.status,
  description: row.description,
  intakeBotIds: fromJson<WebhookEndpoint["intakeBotIds"]>(row.intake_bot_ids),
  secret: row.secret,
  previousSecret: row.previous_secret ?? null,
  previousSecretExpiresAt: toMillisOrNull(row.previous_secret_expires_at ?? null),
  lastDeliveryAt: toMillisOrNull(row.last_delivery_at),
  lastDeliveryOk: row.last_delivery_ok,
  consecutiveFails: toNumber(row.consecutive_fails),
  failingSince: toMillisOrNull(row.failing_since),
  rateLimit: row.rate_limit === null ? null : toNumber(row.rate_limit),
  circuitOpenUntil: toMillisOrNull(row.circuit_open_until),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

export const PgWebhookRepository = Layer.effect(
  WebhookRepository,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const findOne = (rows: ReadonlyArray<WebhookEndpointRow>) =>
      Option.map(Option.fromNullable(rows[0]), endpointFromRow)
    return WebhookRepository.of({
      // The workspace's advisory lock serializes the count and the insert.
      insertWithinCap: (e, max) =>
        stored("webhooks.insertWithinCap")(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`intake:webhooks:${e.workspaceId}`}, 0))`
              const [counted] =
                yield* sql<CurrentRow>`SELECT count(*) AS current FROM webhook_endpoints WHERE workspace_id = ${e.workspaceId}`
              const current = toNumber(counted?.current ?? 0)
              if (current >= max)
                return yield* new PlanLimitExceeded({
                  message: `The plan allows ${max} webhook endpoints.`,
                  resource: "webhook_endpoints",
                  current,
                  max
                })
              yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, events, status, description, intake_bot_ids, secret,
                  previous_secret, previous_secret_expires_at,
                  last_delivery_at, last_delivery_ok, consecutive_fails, failing_since, rate_limit, circuit_open_until,
                  created_at, updated_at)
                VALUES (${e.id}, ${e.workspaceId}, ${e.url}, ${JSON.stringify(e.events)}::json, ${e.status}, ${e.description},
                  ${JSON.stringify(e.intakeBotIds)}::json, ${e.secret}, ${e.previousSecret},
                  ${toDateOrNull(e.previousSecretExpiresAt)}, ${toDateOrNull(e.lastDeliveryAt)}, ${e.lastDeliveryOk},
                  ${e.consecutiveFails}, ${toDateOrNull(e.failingSince)}, ${e.rateLimit}, ${toDateOrNull(e.circuitOpenUntil)},
                  ${toDate(e.createdAt)}, ${toDate(e.updatedAt)})`
            })
          )
        ),
      // The secrets are not written: a PATCH that read the row before a rotation must not undo it.
      update: (e) =>
        stored("webhooks.update")(
          Effect.asVoid(sql`UPDATE webhook_endpoints SET url = ${e.url}, events = ${JSON.stringify(e.events)}::json,
              status = ${e.status}, description = ${e.description}, intake_bot_ids = ${JSON.stringify(e.intakeBotIds)}::json,
              last_delivery_at = ${toDateOrNull(e.lastDeliveryAt)}, last_delivery_ok = ${e.lastDeliveryOk},
              consecutive_fails = ${e.consecutiveFails}, failing_since = ${toDateOrNull(e.failingSince)},
              rate_limit = ${e.rateLimit}, circuit_open_until = ${toDateOrNull(e.circuitOpenUntil)},
              updated_at = ${toDate(e.updatedAt)}
            WHERE id = ${e.id}`)
        ),
      // One statement: the right-hand sides read the row as it was, so the current secret moves to previous.
      rotateSecret: (workspaceId, id, secret, previousExpiresAt, now) =>
        stored("webhooks.rotateSecret")(
          Effect.map(
            sql<WebhookEndpointRow>`UPDATE webhook_endpoints SET secret = ${secret},
                previous_secret = ${previousExpiresAt === null ? sql`NULL` : sql`secret`},
                previous_secret_expires_at = ${toDateOrNull(previousExpiresAt)}, updated_at = ${toDate(now)}
              WHERE id = ${id} AND workspace_id = ${workspaceId}
              RETURNING *`,
            findOne
          )
        ),
      findInWorkspace: (workspaceId, id) =>
        stored("webhooks.findInWorkspace")(
          Effect.map(
            sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints WHERE id = ${id} AND workspace_id = ${workspaceId}`,
            findOne
          )
        ),
      list: (workspaceId, page) =>
        stored("webhooks.list")(
          Effect.map(listWebhooksQuery(sql, workspaceId, page), (rows) =>
            pageFrom(rows, page.limit, endpointFromRow)
          )
        ),
      delete: (workspaceId, id) =>
        stored("webhooks.delete")(
          Effect.map(
            sql<IdRow>`DELETE FROM webhook_endpoints WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`,
            (rows) => rows.length > 0
          )
        )
    })
  })
)

/** The key of the advisory lock that marks a scope in flight. */
const inFlightLock = (scope: IdempotencyScope) => `intake:idempotency:${scope.apiKeyId}|${scope.key}`

/**
 * The in-flight marker is a transaction-scoped advisory lock on (api key, idempotency
 * key): a concurrent duplicate does not wait for the first request but is answered
 * idempotency_conflict at once; once the first commits, the lock is gone and its stored
 * response replays. The claim takes the lock and reads the record in one statement, whose
 * snapshot is taken before the lock: a record committed in between is not seen, so
 * `complete` inserts only where no unexpired record is, and tells when one was.
 */
export const PgIdempotencyStore = Layer.effect(
  IdempotencyStore,
  Effect.zipWith(SqlClient.SqlClient, statementSteps, (sql, { step, deferred }) => {
    // The advisory lock and the record in one statement (its snapshot predates the lock:
    // `complete` catches a record stored in between).
    const claimIn = (scope: IdempotencyScope, fingerprint: string, now: number) =>
      step(
        "idempotency.claim",
        statement`SELECT pg_try_advisory_xact_lock(
            hashtextextended(${inFlightLock(scope)}, 0)) AS locked,
            r.fingerprint, r.response
          FROM (VALUES (1)) AS one LEFT JOIN idempotency_records r
            ON r.api_key_id = ${scope.apiKeyId} AND r.key = ${scope.key} AND r.expires_at > ${toDate(now)}`,
        ([record]): Exit.Exit<IdempotencyClaim, IdempotencyConflict> => {
          if (record?.locked !== true) return Exit.fail(inFlight())
          if (record.fingerprint === null) return Exit.succeed({ _tag: "Fresh" })
          const response = fromJson<StoredResponse | null>(record.response)
          // A reservation (JSON null): an operation outside any transaction still runs.
          if (response === null) return Exit.fail(inFlight())
          if (record.fingerprint !== fingerprint)
            return Exit.fail(
              new IdempotencyConflict({ message: "This Idempotency-Key was used with another request." })
            )
          return Exit.succeed({ _tag: "Replay", response })
        }
      )
    return IdempotencyStore.of({
      claim: claimIn,
      // The lock taken and no unexpired record, or it fails (intake_idempotency_claim_not_fresh,
      // migration 12): it answers no rows, so it goes with the unit of work's next statement.
      claimFresh: (scope, _fingerprint, now) =>
        deferred(
          "idempotency.claimFresh",
          statement`SELECT WHERE CASE
              WHEN pg_try_advisory_xact_lock(hashtextextended(${inFlightLock(scope)}, 0))
                AND NOT EXISTS (SELECT FROM idempotency_records r
                  WHERE r.api_key_id = ${scope.apiKeyId} AND r.key = ${scope.key} AND r.expires_at > ${toDate(now)})
              THEN false
              ELSE intake_idempotency_claim_not_fresh() END`,
          (error) =>
            hasSqlState(error, IDEMPOTENCY_CLAIM_NOT_FRESH_SQLSTATE)
              ? new IdempotencyClaimNotFresh()
              : undefined
        ),
      reserve: (scope, fingerprint, now, until) =>
        stored("idempotency.reserve")(
          Effect.tap(claimIn(scope, fingerprint, now), (claim) =>
            claim._tag === "Fresh"
              ? sql`INSERT INTO idempotency_records (api_key_id, key, fingerprint, response, created_at, expires_at)
                  VALUES (${scope.apiKeyId}, ${scope.key}, ${fingerprint}, 'null'::json, ${toDate(now)}, ${toDate(until)})
                  ON CONFLICT (api_key_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
                    response = EXCLUDED.response, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`
              : Effect.void
          )
        ),
      release: (scope, fingerprint) =>
        stored("idempotency.release")(
          Effect.asVoid(sql`DELETE FROM idempotency_records
            WHERE api_key_id = ${scope.apiKeyId} AND key = ${scope.key} AND fingerprint = ${fingerprint}
              AND response::text = 'null'`)
        ),
      // An expired record not yet purged, or this request's own reservation, is replaced; an
      // unexpired one is kept, and the statement fails (intake_idempotency_record_exists,
      // migration 10). It answers no rows, so it goes with the unit of work's next statement.
      complete: (scope, fingerprint, response, createdAt, expiresAt) =>
        deferred(
          "idempotency.complete",
          statement`WITH stored AS (
              INSERT INTO idempotency_records (api_key_id, key, fingerprint, response, created_at, expires_at)
              VALUES (${scope.apiKeyId}, ${scope.key}, ${fingerprint}, ${JSON.stringify(response)}::json,
                      ${toDate(createdAt)}, ${toDate(expiresAt)})
              ON CONFLICT (api_key_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, response = EXCLUDED.response,
                created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
                WHERE idempotency_records.expires_at <= EXCLUDED.created_at
                  OR (idempotency_records.response::text = 'null'
                      AND idempotency_records.fingerprint = EXCLUDED.fingerprint)
              RETURNING 1
            )
            SELECT WHERE CASE WHEN EXISTS (SELECT FROM stored) THEN false
              ELSE intake_idempotency_record_exists() END`,
          (error) =>
            hasSqlState(error, IDEMPOTENCY_RECORD_EXISTS_SQLSTATE) ? new IdempotencyRecordExists() : undefined
        ),
      // In batches, each its own statement: a backlog of millions stays within the pool's
      // query timeout and never holds one long lock on the table.
      purgeExpired: (now) =>
        stored("idempotency.purgeExpired")(
          purgedInBatches(
            PURGE_BATCH,
            sql<Row>`WITH purged AS (
              DELETE FROM idempotency_records WHERE (api_key_id, key) IN (
                SELECT api_key_id, key FROM idempotency_records
                WHERE expires_at <= ${toDate(now)} LIMIT ${PURGE_BATCH}
              ) RETURNING 1
            ) SELECT count(*) AS purged FROM purged`
          )
        )
    })
  })
)

const inFlight = () =>
  new IdempotencyConflict({ message: "A request with this Idempotency-Key is still in progress." })

/** Expired idempotency records deleted per statement by purgeExpired. */
export const PURGE_BATCH = 5_000

export const PgWebhookPortsLive = Layer.mergeAll(PgWebhookRepository, PgIdempotencyStore)
