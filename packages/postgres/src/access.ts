/**
 * Workspaces and API keys on Postgres.
 * Statement style: `@effect/sql`'s sql`...` throughout: none of these is on a request's hot path, so none pays for the driver's prepared statements (driver/README.md).
 */
import { SqlClient } from "@effect/sql"
import {
  type ApiKey,
  ApiKeyRepository,
  PlanLimitExceeded,
  type Workspace,
  WorkspaceRepository
} from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import type { ApiKeyRow, CurrentRow, WorkspaceRow } from "./rows.js"
import {
  fromJson,
  type Row,
  stored,
  toDate,
  toDateOrNull,
  toMillis,
  toMillisOrNull,
  toNumber
} from "./storage.js"

export const workspaceFromRow = (row: WorkspaceRow): Workspace => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  status: row.status,
  monthlySubmissionQuota:
    row.monthly_submission_quota === null ? null : toNumber(row.monthly_submission_quota),
  rateLimitPerMinute: row.rate_limit_per_minute === null ? null : toNumber(row.rate_limit_per_minute),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

export const PgWorkspaceRepository = Layer.effect(
  WorkspaceRepository,
  Effect.map(SqlClient.SqlClient, (sql) =>
    WorkspaceRepository.of({
      insert: (w) =>
        stored("workspaces.insert")(
          sql`INSERT INTO workspaces (id, name, plan, status, monthly_submission_quota, rate_limit_per_minute, created_at, updated_at)
              VALUES (${w.id}, ${w.name}, ${w.plan}, ${w.status}, ${w.monthlySubmissionQuota}, ${w.rateLimitPerMinute},
                      ${toDate(w.createdAt)}, ${toDate(w.updatedAt)})`.pipe(Effect.asVoid)
        ),
      update: (w) =>
        stored("workspaces.update")(
          sql`UPDATE workspaces SET name = ${w.name}, plan = ${w.plan}, status = ${w.status},
                monthly_submission_quota = ${w.monthlySubmissionQuota}, rate_limit_per_minute = ${w.rateLimitPerMinute},
                created_at = ${toDate(w.createdAt)}, updated_at = ${toDate(w.updatedAt)}
              WHERE id = ${w.id}`.pipe(Effect.asVoid)
        ),
      findById: (id) =>
        stored("workspaces.findById")(
          Effect.map(sql<WorkspaceRow>`SELECT * FROM workspaces WHERE id = ${id}`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), workspaceFromRow)
          )
        )
    })
  )
)

const apiKeyFromRow = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  workspaceId: row.workspace_id,
  name: row.name,
  keyHash: row.key_hash,
  scopes: fromJson<ApiKey["scopes"]>(row.scopes),
  expiresAt: toMillisOrNull(row.expires_at),
  revokedAt: toMillisOrNull(row.revoked_at),
  lastUsedAt: toMillisOrNull(row.last_used_at),
  createdAt: toMillis(row.created_at)
})

export const PgApiKeyRepository = Layer.effect(
  ApiKeyRepository,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const findOne = (rows: ReadonlyArray<ApiKeyRow>) =>
      Option.map(Option.fromNullable(rows[0]), apiKeyFromRow)
    return ApiKeyRepository.of({
      // The workspace's advisory lock serializes the count and the insert against every
      // other insert of the workspace until the (outermost) transaction ends.
      insertWithinCap: (key, max, now) =>
        stored("apiKeys.insertWithinCap")(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`intake:api_keys:${key.workspaceId}`}, 0))`
              const [counted] = yield* sql<CurrentRow>`
                SELECT count(*) AS current FROM api_keys
                WHERE workspace_id = ${key.workspaceId} AND revoked_at IS NULL
                  AND (expires_at IS NULL OR expires_at > ${toDate(now)})`
              const current = toNumber(counted?.current ?? 0)
              if (current >= max)
                return yield* new PlanLimitExceeded({
                  message: `This workspace's plan allows ${max} API keys.`,
                  resource: "api_keys",
                  current,
                  max
                })
              yield* sql`INSERT INTO api_keys (id, workspace_id, name, key_hash, scopes, expires_at, revoked_at, last_used_at, created_at)
                VALUES (${key.id}, ${key.workspaceId}, ${key.name}, ${key.keyHash}, ${JSON.stringify(key.scopes)}::json,
                        ${toDateOrNull(key.expiresAt)}, ${toDateOrNull(key.revokedAt)}, ${toDateOrNull(key.lastUsedAt)},
                        ${toDate(key.createdAt)})`
            })
          )
        ),
      findByHash: (keyHash) =>
        stored("apiKeys.findByHash")(
          Effect.map(sql<ApiKeyRow>`SELECT * FROM api_keys WHERE key_hash = ${keyHash}`, findOne)
        ),
      findById: (id) =>
        stored("apiKeys.findById")(
          Effect.map(sql<ApiKeyRow>`SELECT * FROM api_keys WHERE id = ${id}`, findOne)
        ),
      revoke: (id, at) =>
        stored("apiKeys.revoke")(
          Effect.map(
            sql<ApiKeyRow>`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${toDate(at)}) WHERE id = ${id} RETURNING *`,
            findOne
          )
        ),
      // One conditional update: concurrent touches within the interval write once.
      touchLastUsed: (id, at, minIntervalMs) =>
        stored("apiKeys.touchLastUsed")(
          Effect.map(
            sql<Row>`UPDATE api_keys SET last_used_at = ${toDate(at)}
              WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at <= ${toDate(at - minIntervalMs)})
              RETURNING id`,
            (rows) => rows.length > 0
          )
        )
    })
  })
)
