/**
 * The error catalog of the public API, one tagged error per code. Each error knows the
 * stable `code`, the HTTP status it answers with and the `details` object of the
 * contract; the HTTP layer only serializes them.
 */
import { Schema } from "effect"

/** What a 404 names. workspace and api_key appear only on the operator interface. */
export const ResourceKind = Schema.Literal(
  "intake_bot",
  "submission",
  "webhook",
  "delivery",
  "route",
  "workspace",
  "api_key"
)
export type ResourceKind = typeof ResourceKind.Type

export const LimitedResource = Schema.Literal("submissions", "api_keys", "webhook_endpoints")
export type LimitedResource = typeof LimitedResource.Type

/** One validation problem; `path` is dotted from the body ("data.email", "events.0") or a query name. */
export const ValidationIssue = Schema.Struct({ path: Schema.String, message: Schema.String })
export type ValidationIssue = typeof ValidationIssue.Type

export class AuthenticationRequired extends Schema.TaggedError<AuthenticationRequired>()(
  "AuthenticationRequired",
  {
    message: Schema.String
  }
) {
  get code() {
    return "authentication_required" as const
  }
  get httpStatus() {
    return 401 as const
  }
  get details(): Record<string, unknown> | undefined {
    return undefined
  }
}

export class InsufficientScopes extends Schema.TaggedError<InsufficientScopes>()("InsufficientScopes", {
  message: Schema.String,
  required: Schema.Array(Schema.String),
  granted: Schema.Array(Schema.String)
}) {
  get code() {
    return "insufficient_scopes" as const
  }
  get httpStatus() {
    return 403 as const
  }
  get details() {
    return { required: this.required, granted: this.granted }
  }
}

export class FeatureNotAvailable extends Schema.TaggedError<FeatureNotAvailable>()("FeatureNotAvailable", {
  message: Schema.String,
  feature: Schema.String
}) {
  get code() {
    return "feature_not_available" as const
  }
  get httpStatus() {
    return 403 as const
  }
  get details() {
    return { feature: this.feature }
  }
}

export class WorkspaceArchived extends Schema.TaggedError<WorkspaceArchived>()("WorkspaceArchived", {
  message: Schema.String
}) {
  get code() {
    return "workspace_archived" as const
  }
  get httpStatus() {
    return 403 as const
  }
  get details(): Record<string, unknown> | undefined {
    return undefined
  }
}

export class ResourceNotFound extends Schema.TaggedError<ResourceNotFound>()("ResourceNotFound", {
  message: Schema.String,
  resource: ResourceKind
}) {
  get code() {
    return "resource_not_found" as const
  }
  get httpStatus() {
    return 404 as const
  }
  get details() {
    return { resource: this.resource }
  }
}

/**
 * 400 for what the request alone shows to be wrong; 422 for what needs other workspace
 * data (bots outside the workspace, a webhook URL resolving to a forbidden address).
 */
export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", {
  message: Schema.String,
  status: Schema.Literal(400, 422),
  issues: Schema.Array(ValidationIssue),
  unknownKeys: Schema.optional(Schema.Array(Schema.String)),
  /** How many issues there were when more than MAX_LISTED_ISSUES (the list keeps the first ones). */
  issueCount: Schema.optional(Schema.Number),
  /** How many unknown keys there were when more than MAX_LISTED_ISSUES. */
  unknownKeyCount: Schema.optional(Schema.Number)
}) {
  get code() {
    return "validation_failed" as const
  }
  get httpStatus() {
    return this.status
  }
  get details() {
    return {
      issues: this.issues,
      ...(this.issueCount === undefined ? {} : { issue_count: this.issueCount }),
      ...(this.unknownKeys === undefined ? {} : { unknown_keys: this.unknownKeys }),
      ...(this.unknownKeyCount === undefined ? {} : { unknown_key_count: this.unknownKeyCount })
    }
  }
}

export class RateLimitExceeded extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number
}) {
  get code() {
    return "rate_limit_exceeded" as const
  }
  get httpStatus() {
    return 429 as const
  }
  get details() {
    return { retry_after: this.retryAfterSeconds }
  }
}

export class PlanLimitExceeded extends Schema.TaggedError<PlanLimitExceeded>()("PlanLimitExceeded", {
  message: Schema.String,
  resource: LimitedResource,
  current: Schema.Number,
  max: Schema.Number
}) {
  get code() {
    return "plan_limit_exceeded" as const
  }
  get httpStatus() {
    return 429 as const
  }
  get details() {
    return { resource: this.resource, current: this.current, max: this.max }
  }
}

export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  message: Schema.String
}) {
  get code() {
    return "idempotency_conflict" as const
  }
  get httpStatus() {
    return 409 as const
  }
  get details(): Record<string, unknown> | undefined {
    return undefined
  }
}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {
  get code() {
    return "conflict" as const
  }
  get httpStatus() {
    return 409 as const
  }
  get details(): Record<string, unknown> | undefined {
    return undefined
  }
}

/** The sanitized 500: never carries a stack, SQL text or driver message. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {
  get code() {
    return "internal_error" as const
  }
  get httpStatus() {
    return 500 as const
  }
  get details(): Record<string, unknown> | undefined {
    return undefined
  }
}

/**
 * The one failure a port may add to domain errors: its store did not answer. `cause` is
 * for logs only and never reaches a client (the HTTP layer answers internal_error).
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  operation: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** Every error a client may see, as a union. */
export type ApiError =
  | AuthenticationRequired
  | InsufficientScopes
  | FeatureNotAvailable
  | WorkspaceArchived
  | ResourceNotFound
  | ValidationFailed
  | RateLimitExceeded
  | PlanLimitExceeded
  | IdempotencyConflict
  | Conflict
  | InternalError

const apiErrorClasses = [
  AuthenticationRequired,
  InsufficientScopes,
  FeatureNotAvailable,
  WorkspaceArchived,
  ResourceNotFound,
  ValidationFailed,
  RateLimitExceeded,
  PlanLimitExceeded,
  IdempotencyConflict,
  Conflict,
  InternalError
] as const

/** True for an error of the catalog, which a client may see as itself. */
export const isApiError = (u: unknown): u is ApiError =>
  apiErrorClasses.some((errorClass) => u instanceof errorClass)

export const notFound = (resource: ResourceKind): ResourceNotFound =>
  new ResourceNotFound({ message: `The ${resource.replace("_", " ")} was not found.`, resource })

/**
 * The most issues (and unknown keys) an answer lists; past it, `issue_count` and
 * `unknown_key_count` say how many there were (docs/choices.md): a body of 96,000 unknown
 * keys answers a few kilobytes, not megabytes.
 */
export const MAX_LISTED_ISSUES = 100

export const invalid = (
  issues: ReadonlyArray<ValidationIssue>,
  options: { readonly status?: 400 | 422; readonly unknownKeys?: ReadonlyArray<string> } = {}
): ValidationFailed => {
  const unknownKeys = options.unknownKeys
  return new ValidationFailed({
    message:
      issues.length === 1 ? `${issues[0]!.path || "body"}: ${issues[0]!.message}` : "The request is invalid.",
    status: options.status ?? 400,
    issues: issues.length > MAX_LISTED_ISSUES ? issues.slice(0, MAX_LISTED_ISSUES) : issues,
    ...(issues.length > MAX_LISTED_ISSUES ? { issueCount: issues.length } : {}),
    ...(unknownKeys === undefined
      ? {}
      : unknownKeys.length > MAX_LISTED_ISSUES
        ? { unknownKeys: unknownKeys.slice(0, MAX_LISTED_ISSUES), unknownKeyCount: unknownKeys.length }
        : { unknownKeys })
  })
}

/** `failure` with `more` issues after its own, still listing at most MAX_LISTED_ISSUES. */
export const withIssues = (
  failure: ValidationFailed,
  more: ReadonlyArray<ValidationIssue>
): ValidationFailed => {
  const total = (failure.issueCount ?? failure.issues.length) + more.length
  const issues = [...failure.issues, ...more].slice(0, MAX_LISTED_ISSUES)
  return new ValidationFailed({
    message: total === 1 ? `${issues[0]!.path || "body"}: ${issues[0]!.message}` : "The request is invalid.",
    status: failure.status,
    issues,
    ...(total > issues.length ? { issueCount: total } : {}),
    ...(failure.unknownKeys === undefined ? {} : { unknownKeys: failure.unknownKeys }),
    ...(failure.unknownKeyCount === undefined ? {} : { unknownKeyCount: failure.unknownKeyCount })
  })
}
