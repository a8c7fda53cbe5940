/**
 * The error catalog of the public API (docs/rules.md, Errors): one entry per code, from
 * which everything else follows. The entry gives the HTTP status, the `details` object as
 * it travels (a schema) and the words the OpenAPI document uses; `CatalogError` makes the
 * domain's tagged error of a code from it, packages/api its wire schema and its OpenAPI
 * entries, and the errors table of the guides (docs/guides/errors.md) its words and
 * `remedy`. A new code is one entry here and one class below.
 */
import { type Cause, Schema } from "effect"
import { cutText } from "./cut-text.js"
import { Scope } from "./models.js"

/** What a v1 404 names (the outermost missing resource, or `route`). */
export const PublicResourceKind = Schema.Literal("intake_bot", "submission", "webhook", "delivery", "route")
export type PublicResourceKind = typeof PublicResourceKind.Type

/** What a 404 names. workspace and api_key appear only on the operator interface. */
export const ResourceKind = Schema.Literal(...PublicResourceKind.literals, "workspace", "api_key")
export type ResourceKind = typeof ResourceKind.Type

export const LimitedResource = Schema.Literal("submissions", "api_keys", "webhook_endpoints")
export type LimitedResource = typeof LimitedResource.Type

/** A count or another whole number from 0: `integer` in the document, not `number`. */
export const Count = Schema.Int.annotations({
  identifier: "Count",
  jsonSchema: { type: "integer", minimum: 0 }
})

/** One validation problem; `path` is dotted from the body ("data.email", "events.0") or a query name. */
export const ValidationIssue = Schema.Struct({
  path: Schema.String.annotations({
    description:
      'dotted from the body ("data.email", "events.0"), a query parameter ("limit"), or "" for the whole body'
  }),
  message: Schema.String
}).annotations({ identifier: "ValidationIssue" })
export type ValidationIssue = typeof ValidationIssue.Type

/** What one code is: its status, its `details` on the wire, and how the document words it. */
interface CatalogEntry {
  /** The tag of the domain's error class. */
  readonly tag: string
  readonly status: number
  /** The other status the code may answer with (validation_failed: 422 for what needs workspace data). */
  readonly alternateStatus?: number
  /** The fields of `details` as it travels; absent when the code carries none. */
  readonly details?: Schema.Struct.Fields
  /** The error object's description in the document. */
  readonly description: string
  /** What an answer of this code means, in the description of the responses listing it. */
  readonly meaning: string
  /** What a client does about it: the "what to do" of the guides' errors table. */
  readonly remedy: string
}

const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** The catalog, in the order the document lists the codes. */
export const errorCatalog = {
  validation_failed: {
    tag: "ValidationFailed",
    status: 400,
    alternateStatus: 422,
    details: {
      issues: Schema.Array(ValidationIssue),
      issue_count: optional(Count),
      unknown_keys: optional(Schema.Array(Schema.String)),
      unknown_key_count: optional(Count)
    },
    description: "400: the body or a parameter is invalid; 422: it needs other workspace data.",
    meaning:
      "400: the body or a parameter is invalid (`details: { issues, unknown_keys? }`); 422: it needs other workspace data",
    remedy:
      "Fix the request and send it again: each entry of `details.issues` names what is wrong (`path`) and why, and `unknown_keys` lists names the operation does not take. Sent unchanged it fails again. A 422 names workspace data (an intake bot id, the receiver's address) that must change first."
  },
  authentication_required: {
    tag: "AuthenticationRequired",
    status: 401,
    description: "Missing, malformed, unknown, revoked or expired API key.",
    meaning: "missing, malformed, unknown, revoked or expired API key",
    remedy:
      "Send `Authorization: Bearer svc_live_…` with a key that is live. A revoked or expired key never works again: ask a workspace Owner or Admin for a new one."
  },
  insufficient_scopes: {
    tag: "InsufficientScopes",
    status: 403,
    details: { required: Schema.Array(Scope), granted: Schema.Array(Scope) },
    description: "The key lacks the scope the operation needs.",
    meaning: "the key lacks the scope (`details: { required, granted }`)",
    remedy:
      "Use a key that has every scope in `details.required`. Scopes cannot be added to a key: this takes a new key."
  },
  feature_not_available: {
    tag: "FeatureNotAvailable",
    status: 403,
    details: { feature: Schema.Literal("api_access") },
    description: "The workspace's plan has no API access.",
    meaning: "the workspace's plan has no API access (`details: { feature }`)",
    remedy: "The workspace needs the Pro or Business plan for API access; retrying does not help."
  },
  workspace_archived: {
    tag: "WorkspaceArchived",
    status: 403,
    description: "The workspace is archived.",
    meaning: "the workspace is archived",
    remedy: "Nothing a request can change: the workspace must be restored in its settings first."
  },
  resource_not_found: {
    tag: "ResourceNotFound",
    status: 404,
    details: { resource: PublicResourceKind },
    description: "The resource does not exist in this workspace.",
    meaning:
      "`details: { resource }`, one of intake_bot, submission, webhook, delivery, route (the outermost missing one)",
    remedy:
      "Check the id, and that it belongs to the key's workspace (another workspace's resource is 404 too). `route` means the path, or the method on it, does not exist."
  },
  conflict: {
    tag: "Conflict",
    status: 409,
    description: "The operation conflicts with the resource's state.",
    meaning: "the operation conflicts with the resource's state",
    remedy:
      "Change the resource's state first (an intake bot back to `ACTIVE`, a webhook to `active` before a recovery). A redelivery whose source is gone cannot succeed: do not retry it."
  },
  idempotency_conflict: {
    tag: "IdempotencyConflict",
    status: 409,
    description: "The Idempotency-Key was used with another request, or that request is still running.",
    meaning: "the Idempotency-Key was used with another request, or that request is still running",
    remedy:
      "If the first request with this key may still be running, send the same request again a little later. A different request needs a new `Idempotency-Key`."
  },
  rate_limit_exceeded: {
    tag: "RateLimitExceeded",
    status: 429,
    details: {
      retry_after: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({
        jsonSchema: { type: "integer", minimum: 1 }
      })
    },
    description:
      "Too many requests: the key's rate limit, the client address's limit on failed authentication, or a server shedding load; retry after `retry_after` seconds (also the Retry-After header).",
    meaning:
      "too many requests: the key's limit, the address's limit before a key is valid, or load shedding (`details: { retry_after }`)",
    remedy:
      "Wait `Retry-After` seconds (the same number as `details.retry_after`), then send it again. Pace your requests with `X-RateLimit-Remaining` to avoid it."
  },
  plan_limit_exceeded: {
    tag: "PlanLimitExceeded",
    status: 429,
    details: { resource: LimitedResource, current: Count, max: Count },
    description: "A limit of the workspace's plan is reached.",
    meaning: "a plan limit is reached (`details: { resource, current, max }`)",
    remedy:
      "`details.resource` is used up. `submissions`: the quota renews at the start of the next calendar month (UTC). `webhook_endpoints` or `api_keys`: delete or revoke one first. Or move to a larger plan."
  },
  internal_error: {
    tag: "InternalError",
    status: 500,
    description: "An unexpected error; no internal detail is given (quote the X-Request-Id).",
    meaning: "an unexpected error; no internal detail is given",
    remedy:
      "Retry with a backoff (a POST with the same `Idempotency-Key`: a 500 stores nothing, and a failed operation leaves nothing half done). If it keeps failing, report the `X-Request-Id`."
  }
} as const satisfies Record<string, CatalogEntry>

type Catalog = typeof errorCatalog
export type ErrorCode = keyof Catalog

/** The `details` a code carries, as its entry declares them (undefined when it declares none). */
export type ErrorDetails<C extends ErrorCode> = Catalog[C] extends {
  readonly details: infer Fields extends Schema.Struct.Fields
}
  ? Schema.Struct.Type<Fields>
  : undefined

/** The statuses a code answers with. */
export type ErrorStatus<C extends ErrorCode> =
  | Catalog[C]["status"]
  | (Catalog[C] extends { readonly alternateStatus: infer S } ? S : never)

/** What every catalog error shows the HTTP layer, which only serializes it. */
interface Catalogued<C extends ErrorCode> {
  readonly code: C
  readonly httpStatus: ErrorStatus<C>
  readonly details: ErrorDetails<C>
}

type ErrorFields<C extends ErrorCode, Fields extends Schema.Struct.Fields> = {
  readonly _tag: Schema.tag<Catalog[C]["tag"]>
  readonly message: typeof Schema.String
} & Fields

/** A `Schema.TaggedError` class whose instances also carry their code's catalog entry. */
interface CatalogErrorClass<Self, C extends ErrorCode, Fields extends Schema.Struct.Fields>
  extends Schema.Class<
    Self,
    ErrorFields<C, Fields>,
    Schema.Struct.Encoded<ErrorFields<C, Fields>>,
    Schema.Struct.Context<ErrorFields<C, Fields>>,
    Schema.Struct.Constructor<Omit<ErrorFields<C, Fields>, "_tag">>,
    Catalogued<C>,
    Cause.YieldableError
  > {
  readonly _tag: Catalog[C]["tag"]
}

/**
 * The tagged error of `code`: tag and status from its entry, `fields` (beside `message`)
 * as the domain holds them, `details` mapping them onto the entry's wire shape (checked
 * against it by the compiler).
 */
const CatalogError =
  <Self>() =>
  <C extends ErrorCode, Fields extends Schema.Struct.Fields>(
    code: C,
    fields: Fields,
    details: (error: Schema.Struct.Type<Fields>) => ErrorDetails<C>
  ): CatalogErrorClass<Self, C, Fields> => {
    const entry: CatalogEntry = errorCatalog[code]
    // Typed by the return type: TypeScript cannot extend a class whose fields are generic.
    // biome-ignore lint/suspicious/noExplicitAny: see above
    const Base: any = Schema.TaggedError<any>()(entry.tag, { message: Schema.String, ...fields })
    return class extends Base {
      get code() {
        return code
      }
      get httpStatus() {
        return entry.status
      }
      get details() {
        return details(this as never)
      }
    } as never
  }

const none = () => undefined

export class AuthenticationRequired extends CatalogError<AuthenticationRequired>()(
  "authentication_required",
  {},
  none
) {}

export class InsufficientScopes extends CatalogError<InsufficientScopes>()(
  "insufficient_scopes",
  { required: Schema.Array(Scope), granted: Schema.Array(Scope) },
  (error) => ({ required: error.required, granted: error.granted })
) {}

export class FeatureNotAvailable extends CatalogError<FeatureNotAvailable>()(
  "feature_not_available",
  { feature: Schema.Literal("api_access") },
  (error) => ({ feature: error.feature })
) {}

export class WorkspaceArchived extends CatalogError<WorkspaceArchived>()("workspace_archived", {}, none) {}

export class ResourceNotFound extends CatalogError<ResourceNotFound>()(
  "resource_not_found",
  { resource: ResourceKind },
  // The catalog is API v1's, whose 404s never name the operator interface's workspace or
  // api_key; those travel only on /admin, which no document or client describes.
  (error) => ({ resource: error.resource as PublicResourceKind })
) {}

/**
 * 400 for what the request alone shows to be wrong; 422 for what needs other workspace
 * data (bots outside the workspace, a webhook URL resolving to a forbidden address).
 */
export class ValidationFailed extends CatalogError<ValidationFailed>()(
  "validation_failed",
  {
    status: Schema.Literal(400, 422),
    issues: Schema.Array(ValidationIssue),
    unknownKeys: Schema.optional(Schema.Array(Schema.String)),
    /** How many issues there were when the list could not hold them all (it keeps the first ones). */
    issueCount: Schema.optional(Schema.Number),
    /** How many unknown keys there were when the list could not hold them all. */
    unknownKeyCount: Schema.optional(Schema.Number)
  },
  (error) => ({
    issues: error.issues,
    ...(error.issueCount === undefined ? {} : { issue_count: error.issueCount }),
    ...(error.unknownKeys === undefined ? {} : { unknown_keys: error.unknownKeys }),
    ...(error.unknownKeyCount === undefined ? {} : { unknown_key_count: error.unknownKeyCount })
  })
) {
  override get httpStatus() {
    return this.status
  }
}

export class RateLimitExceeded extends CatalogError<RateLimitExceeded>()(
  "rate_limit_exceeded",
  { retryAfterSeconds: Schema.Number },
  (error) => ({ retry_after: error.retryAfterSeconds })
) {}

export class PlanLimitExceeded extends CatalogError<PlanLimitExceeded>()(
  "plan_limit_exceeded",
  { resource: LimitedResource, current: Schema.Number, max: Schema.Number },
  (error) => ({ resource: error.resource, current: error.current, max: error.max })
) {}

export class IdempotencyConflict extends CatalogError<IdempotencyConflict>()(
  "idempotency_conflict",
  {},
  none
) {}

export class Conflict extends CatalogError<Conflict>()("conflict", {}, none) {}

/** The sanitized 500: never carries a stack, SQL text or driver message. */
export class InternalError extends CatalogError<InternalError>()("internal_error", {}, none) {}

/**
 * The one failure a port may add to domain errors: its store did not answer. `cause` is
 * for logs only and never reaches a client (the HTTP layer answers internal_error).
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  operation: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** The class of each code, in the catalog's order (the domain's tests check one per code). */
export const apiErrorClasses = [
  ValidationFailed,
  AuthenticationRequired,
  InsufficientScopes,
  FeatureNotAvailable,
  WorkspaceArchived,
  ResourceNotFound,
  Conflict,
  IdempotencyConflict,
  RateLimitExceeded,
  PlanLimitExceeded,
  InternalError
] as const

/** Every error a client may see, as a union. */
export type ApiError = InstanceType<(typeof apiErrorClasses)[number]>

/** True for an error of the catalog, which a client may see as itself. */
export const isApiError = (u: unknown): u is ApiError =>
  apiErrorClasses.some((errorClass) => u instanceof errorClass)

export const notFound = (resource: ResourceKind): ResourceNotFound =>
  new ResourceNotFound({ message: `The ${resource.replace("_", " ")} was not found.`, resource })

/**
 * The most issues (and unknown keys) an answer lists; past it, `issue_count` and
 * `unknown_key_count` say how many there were (docs/rules.md, Errors): a body of 96,000
 * unknown keys answers a few kilobytes, not megabytes.
 */
export const MAX_LISTED_ISSUES = 100

/**
 * The longest name an error answer echoes from the request (an issue's path, an unknown
 * key), in characters; a longer one is cut, ending in "…" (docs/rules.md, Errors).
 */
export const MAX_ECHOED_NAME_LENGTH = 100

/** The longest issue message, which may quote a value sent; a longer one is cut the same way. */
export const MAX_ISSUE_MESSAGE_LENGTH = 300

/**
 * What the listed issues, and apart from them the listed unknown keys, may take as UTF-8
 * JSON: with the cuts above, an error body stays under 64 KB whatever the request (its
 * escapes included: a control character is six bytes in JSON). Past it, fewer are listed
 * and counted as past MAX_LISTED_ISSUES.
 */
const ISSUES_BUDGET_BYTES = 40_000
const UNKNOWN_KEYS_BUDGET_BYTES = 12_000

/** `name` as an error answer may echo it: at most MAX_ECHOED_NAME_LENGTH characters. */
export const echoedName = (name: string): string => cutText(name, MAX_ECHOED_NAME_LENGTH)

const echoedIssue = (issue: ValidationIssue): ValidationIssue =>
  issue.path.length <= MAX_ECHOED_NAME_LENGTH && issue.message.length <= MAX_ISSUE_MESSAGE_LENGTH
    ? issue
    : { path: echoedName(issue.path), message: cutText(issue.message, MAX_ISSUE_MESSAGE_LENGTH) }

const encoder = new TextEncoder()

/**
 * The first of `items` an answer lists: at most MAX_LISTED_ISSUES, cut by `echo`, and
 * within `budget` bytes of JSON (the first one always: cut, it is far smaller).
 */
const listed = <A>(items: ReadonlyArray<A>, echo: (item: A) => A, budget: number): ReadonlyArray<A> => {
  const kept: Array<A> = []
  let used = 0
  for (const item of items) {
    if (kept.length === MAX_LISTED_ISSUES) break
    const echoed = echo(item)
    used += encoder.encode(JSON.stringify(echoed)).length + 1
    if (used > budget && kept.length > 0) break
    kept.push(echoed)
  }
  return kept
}

const messageOf = (total: number, issues: ReadonlyArray<ValidationIssue>) =>
  total === 1 ? `${issues[0]!.path || "body"}: ${issues[0]!.message}` : "The request is invalid."

/**
 * The validation failure of `issues` (and `unknownKeys`), bounded whatever the request:
 * every echoed name and message cut, at most MAX_LISTED_ISSUES of each listed within the
 * byte budgets, with the totals when some are left out.
 */
export const invalid = (
  issues: ReadonlyArray<ValidationIssue>,
  options: { readonly status?: 400 | 422; readonly unknownKeys?: ReadonlyArray<string> } = {}
): ValidationFailed => {
  const unknownKeys = options.unknownKeys
  const listedIssues = listed(issues, echoedIssue, ISSUES_BUDGET_BYTES)
  const listedKeys =
    unknownKeys === undefined ? undefined : listed(unknownKeys, echoedName, UNKNOWN_KEYS_BUDGET_BYTES)
  return new ValidationFailed({
    message: messageOf(issues.length, listedIssues),
    status: options.status ?? 400,
    issues: listedIssues,
    ...(issues.length > listedIssues.length ? { issueCount: issues.length } : {}),
    ...(unknownKeys === undefined || listedKeys === undefined
      ? {}
      : {
          unknownKeys: listedKeys,
          ...(unknownKeys.length > listedKeys.length ? { unknownKeyCount: unknownKeys.length } : {})
        })
  })
}

/** `failure` with `more` issues after its own, bounded as `invalid` bounds them. */
export const withIssues = (
  failure: ValidationFailed,
  more: ReadonlyArray<ValidationIssue>
): ValidationFailed => {
  const total = (failure.issueCount ?? failure.issues.length) + more.length
  const issues = listed([...failure.issues, ...more], echoedIssue, ISSUES_BUDGET_BYTES)
  return new ValidationFailed({
    message: messageOf(total, issues),
    status: failure.status,
    issues,
    ...(total > issues.length ? { issueCount: total } : {}),
    ...(failure.unknownKeys === undefined ? {} : { unknownKeys: failure.unknownKeys }),
    ...(failure.unknownKeyCount === undefined ? {} : { unknownKeyCount: failure.unknownKeyCount })
  })
}
