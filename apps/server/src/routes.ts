/**
 * Serving the endpoints of packages/api. The server owns the request pipeline (auth and
 * rate limit before routing, then scope, then body and parameters, then the operation, as
 * checks-in-order.ts composes them), so it routes itself: its route table is read from the
 * API's groups at start-up (`routesOf`), and each endpoint's own schemas decode its path,
 * query and body and encode its answer: the contract stays the single source of both.
 *
 * Why not `HttpApiBuilder`: the contract is `@effect/platform`'s HttpApi, but it is served
 * here rather than by `HttpApiBuilder` and its middleware, for two reasons. The order of
 * checks of docs/rules.md ("Checks in order") puts the key, the workspace and the rate limit
 * before the route, so an unknown path with a bad key answers 401 and every /v1 answer
 * carries the rate-limit headers; a router that matches first and runs middleware per
 * endpoint answers in the other order. And Effect's HTTP server costs a per-request router,
 * tracer span and header wrappers, more than the whole of a cached read
 * (docs/performance.md, The request path). What HttpApi gives is kept: one declaration per
 * endpoint, the OpenAPI document and derived clients.
 *
 * Where a new endpoint goes: declare it once in its group in packages/api (v1.ts with its
 * `RequiredScope` and `EndpointErrors`, or admin.ts for the operator interface): method,
 * path, schemas. Then add its handler, under the endpoint's name, to `v1Handlers`
 * (handlers-v1.ts) or `adminHandlers` (handlers-admin.ts), with its `ServeOptions`; the
 * compiler refuses a missing or stray handler, and `routesOf` stops the server before it
 * listens (test/route-table.test.ts). Nothing in this file changes for a new endpoint.
 */
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import type * as HttpMethod from "@effect/platform/HttpMethod"
import {
  type ApiOfGroups,
  type EndpointOf,
  endpointsOf,
  IDEMPOTENCY_KEY,
  RequiredScope,
  WireJson
} from "@intake/api"
import {
  type Access,
  Idempotency,
  invalid,
  isApiError,
  type Principal,
  type StoredResponse,
  type ValidationFailed
} from "@intake/domain"
import { Context, Effect, Option, ParseResult, type Schema, SchemaAST } from "effect"
import { readJsonBody } from "./body.js"
import { successEncoder } from "./encoding.js"
import { oneIssuePerPath, unknownKeyIssue } from "./issue-messages.js"
import { type IncomingRequest, queryParams } from "./request.js"
import { errorBody, json, type Reply, successJsonText, withHeader } from "./responses.js"

/**
 * The request's id, and what a handler adds to its log line (docs/operations.md, Request ids):
 * a create names the submission and the event it raised.
 */
export interface RequestNotes {
  readonly requestId: string
  /** The traceparent of the request's span, when traces are on (docs/operations.md, Traces). */
  traceParent?: string
  submissionId?: string
  eventIds?: ReadonlyArray<string>
}

export interface Input<P, U, B> {
  readonly path: P
  readonly urlParams: U
  readonly payload: B
  readonly principal: Principal
  readonly notes: RequestNotes
}

/** A matched request, as the dispatcher hands it to a route. */
export interface Matched {
  readonly request: IncomingRequest
  readonly params: Readonly<Record<string, string>>
  readonly principal: Principal | null
  readonly notes: RequestNotes
}

export interface Route<R> {
  /** The endpoint's operation, e.g. createSubmission (its span's name when traces are on). */
  readonly name: string
  readonly method: HttpMethod.HttpMethod
  /** The endpoint's path with its parameters named, e.g. /v1/intake-bots/:id (for the logs). */
  readonly path: string
  readonly pattern: RegExp
  readonly names: ReadonlyArray<string>
  /** The scope a key needs, checked before `run` (checks-in-order.ts: `dispatch`); none on /admin. */
  readonly scope: Option.Option<RequiredScope["Type"]>
  /** What follows the scope (docs/rules.md, Checks in order, 5): the parameters, the body, the operation. */
  readonly run: (matched: Matched) => Effect.Effect<Reply, unknown, R>
}

const compile = (path: string) => {
  const names: Array<string> = []
  const source = path
    .split("/")
    .map((segment) => {
      if (!segment.startsWith(":")) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      names.push(segment.slice(1))
      return "([^/]+)"
    })
    .join("/")
  return { pattern: new RegExp(`^${source}/?$`), names }
}

const decodeParams = (names: ReadonlyArray<string>, found: RegExpExecArray) => {
  const params: Record<string, string> = {}
  try {
    names.forEach((name, i) => {
      params[name] = decodeURIComponent(found[i + 1]!)
      // No id holds a NUL, and no store takes one: such a path names nothing (docs/choices.md).
      if (params[name].includes("\u0000")) throw new URIError("NUL in a path parameter")
    })
  } catch {
    return undefined
  }
  return params
}

/** The route for `pathname`, or undefined when no route serves it with this method. */
export const match = <R>(routes: ReadonlyArray<Route<R>>, method: string, pathname: string) => {
  for (const route of routes) {
    if (route.method !== method) continue
    const found = route.pattern.exec(pathname)
    if (found === null) continue
    const params = decodeParams(route.names, found)
    // A malformed percent-escape names no resource: the path matches nothing.
    if (params === undefined) return undefined
    return { route, params }
  }
  return undefined
}

/** One issue per path (a union reports one per member: issue-messages.ts words them as one). */
const issuesOf = (error: ParseResult.ParseIssue) =>
  oneIssuePerPath(
    ParseResult.ArrayFormatter.formatIssueSync(error).map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message
    }))
  )

/** A struct whose every field is a required plain string (no pattern, no brand, no transformation). */
const plainStrings = (ast: SchemaAST.AST) =>
  ast._tag === "TypeLiteral" &&
  ast.indexSignatures.length === 0 &&
  ast.propertySignatures.every(
    (signature) => !signature.isOptional && signature.type._tag === "StringKeyword"
  )

/** A decoder compiled once per schema (at route build time), failing with validation_failed. */
const decoderOf = <A>(schema: Schema.Schema<A, unknown, never>) => {
  const decode = ParseResult.decodeUnknown(schema, { errors: "all" })
  return (input: unknown): Effect.Effect<A, ValidationFailed> =>
    Effect.mapError(decode(input), (error) => invalid(issuesOf(error)))
}

/** Top-level names the body's schema knows; others answer 400 with unknown_keys. */
const knownKeys = (schema: Schema.Schema.Any): ReadonlySet<string> | undefined => {
  const ast = SchemaAST.encodedAST(schema.ast)
  return SchemaAST.isTypeLiteral(ast)
    ? new Set(ast.propertySignatures.map((signature) => String(signature.name)))
    : undefined
}

const rejectUnknownKeys = (body: unknown, known: ReadonlySet<string> | undefined) => {
  if (known === undefined || typeof body !== "object" || body === null || Array.isArray(body))
    return Effect.void
  const unknown = Object.keys(body).filter((key) => !known.has(key))
  return unknown.length === 0
    ? Effect.void
    : Effect.fail(
        invalid(
          unknown.map((key) => unknownKeyIssue(key, known, body)),
          { unknownKeys: unknown }
        )
      )
}

/** The answers an idempotency record keeps: a failure once the operation started (not 400/422/500). */
const storedFailure = (error: unknown): StoredResponse | undefined =>
  isApiError(error) && [404, 409, 429].includes(error.httpStatus)
    ? { status: error.httpStatus, body: errorBody(error) }
    : undefined

const idempotencyKey = (request: IncomingRequest) => {
  const header = request.headers["idempotency-key"]
  if (header === undefined) return Effect.succeed(undefined)
  // Node joins repeated headers with ", "; an array only for the few it keeps apart.
  const value = Array.isArray(header) ? header.join(", ") : header
  return IDEMPOTENCY_KEY.test(value)
    ? Effect.succeed(value)
    : Effect.fail(
        invalid([{ path: "Idempotency-Key", message: "must be 1 to 255 printable ASCII characters" }])
      )
}

export interface ServeOptions {
  /** Run POSTs through Idempotency.run when the client sends an Idempotency-Key (API v1 only). */
  readonly idempotent: boolean
  /**
   * The handler answers the same object again while what it shows is unchanged (a bot from
   * the cache): its encoded answer is kept with it. Off for answers built per request, which
   * would only fill the memo (a weak map costs the garbage collector per entry).
   */
  readonly answersRepeat?: boolean
  /** The operation calls out (sends a webhook): idempotency must keep it outside any transaction. */
  readonly callsOut?: boolean
  /** The body may be left out (no Content-Type, no bytes): it is then decoded as `{}`. */
  readonly optionalBody?: boolean
}

/** A request that sends no body at all: no Content-Type, no length (or 0), not chunked. */
const sendsNoBody = (request: IncomingRequest) =>
  request.headers["content-type"] === undefined &&
  request.headers["transfer-encoding"] === undefined &&
  (request.headers["content-length"] === undefined || request.headers["content-length"] === "0")

/**
 * One endpoint of packages/api served by `handler`, which receives the decoded path,
 * query and body and returns the endpoint's success value (encoded with its schema), or
 * that value already written as JSON (a WireJson, put into the envelope as it is).
 */
export const serve = <
  Name extends string,
  Method extends HttpMethod.HttpMethod,
  P,
  U,
  B,
  H,
  A,
  E,
  RE,
  EH,
  RH
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, P, U, B, H, A, E, never, RE>,
  handler: (input: Input<P, U, B>) => Effect.Effect<A | WireJson<A>, EH, RH>,
  options: ServeOptions
): Route<RH | Access | Idempotency> => {
  const { pattern, names } = compile(endpoint.path)
  const scope = Context.getOption(endpoint.annotations as Context.Context<RequiredScope>, RequiredScope)
  const payloadSchema = endpoint.payloadSchema as Option.Option<Schema.Schema<B, unknown, never>>
  const known = Option.match(payloadSchema, { onNone: () => undefined, onSome: knownKeys })
  const successSchema = endpoint.successSchema as Schema.Schema<A, unknown, never>
  const status = HttpApiSchema.getStatusSuccess(successSchema)
  const encode = successEncoder(successSchema)
  // Data already written as JSON is the encoded form: an idempotency record keeps it parsed.
  const encodeSuccess = (value: A | WireJson<A>) =>
    value instanceof WireJson
      ? Effect.succeed<StoredResponse>({ status, body: { success: true, data: JSON.parse(value.text) } })
      : Effect.orDie(encode(value)).pipe(Effect.map((body): StoredResponse => ({ status, body })))
  // A handler that answers the same object again (a bot from the cache) is encoded once.
  const replies = new WeakMap<object, Reply>()
  const memoized = options.answersRepeat === true
  const replyOf = (value: A | WireJson<A>) => {
    if (value instanceof WireJson) return Effect.succeed(successJsonText(value.text, status))
    const key = memoized && typeof value === "object" && value !== null ? value : undefined
    const memo = key === undefined ? undefined : replies.get(key)
    if (memo !== undefined) return Effect.succeed(memo)
    return Effect.map(encodeSuccess(value), (answer) => {
      const reply = json(answer.body, answer.status)
      if (key !== undefined) replies.set(key, reply)
      return reply
    })
  }
  // Path parameters are strings already: a path schema of plain strings has nothing to decode.
  const decodePath = Option.filterMap(endpoint.pathSchema, (schema) =>
    plainStrings(schema.ast)
      ? Option.none()
      : Option.some(decoderOf(schema as Schema.Schema<P, unknown, never>))
  )
  const decodeUrlParams = Option.map(endpoint.urlParamsSchema, (schema) =>
    decoderOf(schema as Schema.Schema<U, unknown, never>)
  )
  const decodePayload = Option.map(payloadSchema, decoderOf)

  /** The body, checked for unknown names and decoded; the raw JSON kept for the idempotency fingerprint. */
  const bodyOf = Option.map(
    decodePayload,
    (decode) => (request: IncomingRequest) =>
      options.optionalBody === true && sendsNoBody(request)
        ? Effect.map(decode({}), (payload) => ({ raw: undefined as unknown, payload }))
        : Effect.flatMap(readJsonBody(request), (raw) =>
            Effect.zipRight(
              rejectUnknownKeys(raw, known),
              Effect.map(decode(raw), (payload) => ({ raw: raw as unknown, payload }))
            )
          )
  )
  const noBody = Effect.succeed({ raw: undefined as unknown, payload: undefined as B })

  /** The operation with its key: its answer stored, or the stored one replayed. */
  const idempotent = (
    request: IncomingRequest,
    principal: Principal,
    key: string,
    raw: unknown,
    answered: Effect.Effect<A | WireJson<A>, EH, RH>
  ) =>
    Effect.flatMap(Idempotency, (idempotency) =>
      Effect.map(
        (options.callsOut === true ? idempotency.runOutsideTransaction : idempotency.run)(
          {
            apiKeyId: principal.apiKey.id,
            key,
            fingerprint: idempotency.fingerprint(request.method, request.pathname, raw ?? null)
          },
          Effect.flatMap(answered, encodeSuccess),
          { onSuccess: (answer) => answer, onFailure: storedFailure }
        ),
        (outcome) =>
          outcome._tag === "Fresh"
            ? json(outcome.value.body, outcome.value.status)
            : withHeader(json(outcome.response.body, outcome.response.status), "idempotent-replayed", "true")
      )
    )

  // Step 5 of the checks (checks-in-order.ts), in a chain of flatMaps, each only where the
  // endpoint has it (no generator per request): Idempotency-Key, path, query, body, then the operation.
  const run = (matched: Matched) => {
    const request = matched.request
    const principal = matched.principal
    const withBody = (key: string | undefined, path: P, urlParams: U) =>
      Effect.flatMap(Option.isSome(bodyOf) ? bodyOf.value(request) : noBody, ({ raw, payload }) => {
        const answered = handler({
          path,
          urlParams,
          payload,
          principal: principal as Principal,
          notes: matched.notes
        })
        return key === undefined || principal === null
          ? Effect.flatMap(answered, replyOf)
          : idempotent(request, principal, key, raw, answered)
      })
    const withQuery = (key: string | undefined, path: P) =>
      Option.isNone(decodeUrlParams)
        ? withBody(key, path, {} as U)
        : Effect.flatMap(decodeUrlParams.value(queryParams(request.search)), (urlParams) =>
            withBody(key, path, urlParams)
          )
    const withPath = (key: string | undefined) =>
      Option.isNone(decodePath)
        ? withQuery(key, matched.params as P)
        : Effect.flatMap(decodePath.value(matched.params), (path) => withQuery(key, path))
    // Idempotency-Key applies to POST only; on other methods the header is ignored.
    return options.idempotent && principal !== null && request.method === "POST"
      ? Effect.flatMap(idempotencyKey(request), withPath)
      : Effect.suspend(() => withPath(undefined))
  }

  return { name: endpoint.name, method: endpoint.method, path: endpoint.path, pattern, names, scope, run }
}

/** How the server answers one endpoint: its operation over the decoded input, and how it is served. */
export interface Handler<E extends HttpApiEndpoint.HttpApiEndpoint.Any, R> {
  readonly handle: (
    input: Input<
      HttpApiEndpoint.HttpApiEndpoint.PathParsed<E>,
      HttpApiEndpoint.HttpApiEndpoint.UrlParams<E>,
      HttpApiEndpoint.HttpApiEndpoint.Payload<E>
    >
  ) => Effect.Effect<
    HttpApiEndpoint.HttpApiEndpoint.Success<E> | WireJson<HttpApiEndpoint.HttpApiEndpoint.Success<E>>,
    unknown,
    R
  >
  readonly options: ServeOptions
}

/**
 * One handler per endpoint of `Api`, by the endpoint's name: the compiler refuses a missing
 * handler and one for an endpoint the API does not declare (and `routesOf` checks again).
 */
export type Handlers<Api, R> = {
  readonly [E in EndpointOf<Api> as HttpApiEndpoint.HttpApiEndpoint.Name<E>]: Handler<E, R>
}

/** A served endpoint as `serve` takes it once its types are read back from the API at run time. */
type ReadEndpoint = HttpApiEndpoint.HttpApiEndpoint<
  string,
  HttpMethod.HttpMethod,
  unknown,
  unknown,
  unknown,
  unknown,
  unknown,
  unknown,
  never,
  never
>

/**
 * The route table of `api`, built once at start-up: each endpoint its packages/api declares
 * (method, path, scope, schemas), in declaration order, served by its handler. Throws when an
 * endpoint has no handler or a handler no endpoint, so such a server never starts.
 */
export const routesOf = <Api extends ApiOfGroups, R>(
  api: Api,
  handlers: Handlers<Api, R>
): ReadonlyArray<Route<R | Access | Idempotency>> => {
  const endpoints = endpointsOf(api) as unknown as ReadonlyArray<ReadEndpoint>
  const byName = handlers as unknown as Readonly<Record<string, Handler<ReadEndpoint, R>>>
  const unserved = endpoints.filter((endpoint) => !Object.hasOwn(byName, endpoint.name))
  const stray = Object.keys(byName).filter((name) => !endpoints.some((endpoint) => endpoint.name === name))
  if (unserved.length > 0 || stray.length > 0)
    throw new Error(
      [
        ...unserved.map((endpoint) => `endpoint ${endpoint.name} has no handler`),
        ...stray.map((name) => `handler ${name} has no endpoint`)
      ].join("; ")
    )
  return endpoints.map((endpoint) => {
    const handler = byName[endpoint.name]!
    return serve(endpoint, handler.handle, handler.options)
  })
}
