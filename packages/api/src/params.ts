/** Path, query and header parameters shared by the endpoints, with the contract's messages. */
import {
  DateTimes,
  DeliveryStatus,
  type ErrorCode,
  EventPayloads,
  EventType,
  type errorCatalog,
  Paging
} from "@intake/domain/internal"
import { Context, ParseResult, Schema } from "effect"

/** A value of a fixed set, whose failure names every allowed value. */
export const oneOf = <const L extends ReadonlyArray<string>>(...literals: L) =>
  Schema.Literal(...literals).annotations({
    message: () => `must be one of ${literals.map((literal) => `"${literal}"`).join(", ")}`
  })

/** What a bad date-time is told. */
export const DATE_TIME_MESSAGE =
  "must be an ISO 8601 date-time (e.g. 2026-11-21T10:00:00.000Z) of a real day, years 1970 to 9999"

/** The scope an endpoint needs, read by the server before it decodes anything. */
export class RequiredScope extends Context.Tag("@intake/api/RequiredScope")<
  RequiredScope,
  "read:intake-bots" | "write:intake-bots" | "read:submissions" | "manage:webhooks"
>() {}

/** A code of the catalog as it answers with its other status, e.g. `validation_failed_422`. */
export type AlternateErrorCode = {
  readonly [C in ErrorCode]: (typeof errorCatalog)[C] extends {
    readonly alternateStatus: infer S extends number
  }
    ? `${C}_${S}`
    : never
}[ErrorCode]

/**
 * The codes an endpoint's own checks and operation can answer, beside those every /v1
 * request can meet (authentication, workspace, rate limit, scope, internal error).
 * `validation_failed` at 422 is `validation_failed_422` here: the same code, the other status.
 */
export class EndpointErrors extends Context.Tag("@intake/api/EndpointErrors")<
  EndpointErrors,
  ReadonlyArray<ErrorCode | AlternateErrorCode>
>() {}

/** `limit`: an integer from 1 to 100, as decimal digits only (`1.5`, `abc`, `1e2` are refused). */
export const LimitParam = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (text, _, ast) => {
    const value = /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN
    return value >= 1 && value <= 100
      ? ParseResult.succeed(value)
      : ParseResult.fail(new ParseResult.Type(ast, text, "must be an integer from 1 to 100"))
  },
  encode: (value) => ParseResult.succeed(String(value))
}).annotations({
  identifier: "Limit",
  description: "page size, 1 to 100 (default 50)",
  // The document describes the value a client sends (digits), not the string it travels as.
  jsonSchema: {
    type: "integer",
    minimum: 1,
    maximum: 100,
    default: 50,
    description: "page size, 1 to 100 (default 50)"
  }
})

/** An ISO 8601 date-time with a zone naming a real moment (the domain's rule), as epoch milliseconds in code. */
export const DateTimeParam = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (text, _, ast) => {
    const millis = DateTimes.parseDateTime(text)
    return millis !== undefined
      ? ParseResult.succeed(millis)
      : ParseResult.fail(new ParseResult.Type(ast, text, DATE_TIME_MESSAGE))
  },
  encode: (millis) => ParseResult.succeed(new Date(millis).toISOString())
}).annotations({ identifier: "DateTime", description: "ISO 8601 date-time, e.g. 2026-11-21T10:00:00.000Z" })

export const ListParams = Schema.Struct({
  limit: Schema.optionalWith(LimitParam, { exact: true }),
  cursor: Schema.optionalWith(Schema.String, { exact: true })
})

/**
 * The filters of a list taken by creation time, both inclusive; a list that takes them
 * declares its parameters with `createdRangeFilters` so that none misses the order rule.
 */
const createdRange = {
  created_after: Schema.optionalWith(DateTimeParam, { exact: true }),
  created_before: Schema.optionalWith(DateTimeParam, { exact: true })
}

/**
 * A list's query parameters with `createdRange` among them: `created_after` later than
 * `created_before` is 400 validation_failed naming `created_after` (Paging.invertedRangeIssues).
 */
const createdRangeFilters = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct({ ...fields, ...createdRange }).pipe(
    Schema.filter((params) => {
      // The compiler cannot see createdRange's fields through the generic spread.
      const range = params as Schema.Struct.Type<typeof createdRange>
      const [issue] = Paging.invertedRangeIssues(
        { name: "created_after", at: range.created_after },
        { name: "created_before", at: range.created_before }
      )
      return issue === undefined ? true : { path: [issue.path], message: issue.message }
    })
  )

export const SubmissionListParams = createdRangeFilters({
  limit: Schema.optionalWith(LimitParam, { exact: true }),
  cursor: Schema.optionalWith(Schema.String, { exact: true })
})

/** The delivery log's filters (docs/webhooks.md); each one narrows, and the cursor is bound to them. */
export const DeliveryListParams = createdRangeFilters({
  limit: Schema.optionalWith(LimitParam, { exact: true }),
  cursor: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(oneOf(...DeliveryStatus.literals), { exact: true }),
  event_type: Schema.optionalWith(oneOf(...EventType.literals, EventPayloads.TEST_EVENT_TYPE), {
    exact: true
  }),
  submission_id: Schema.optionalWith(Schema.String, { exact: true })
})

export const IdPath = Schema.Struct({ id: Schema.String })
export const SubmissionPath = Schema.Struct({ id: Schema.String, submissionId: Schema.String })
export const DeliveryPath = Schema.Struct({ id: Schema.String, deliveryId: Schema.String })

/** 1 to 255 printable ASCII characters (space to tilde). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optionalWith(
    Schema.String.annotations({ description: "1 to 255 printable ASCII characters; see Idempotency" }),
    { exact: true }
  )
})
