/**
 * Serving the endpoints of packages/api. The server owns the request pipeline (auth and
 * rate limit before routing, then scope, then body and parameters, then the operation),
 * so it routes itself and uses each endpoint's own schemas to decode its path, query and
 * body and to encode its answer: the contract stays the single source of both.
 */
import type { HttpApiEndpoint, HttpMethod } from "@effect/platform"
import { HttpApiSchema, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { IDEMPOTENCY_KEY, RequiredScope } from "@intake/api"
import {
  Access,
  Idempotency,
  invalid,
  isApiError,
  type Principal,
  type StoredResponse,
  type ValidationFailed
} from "@intake/domain"
import { Context, Effect, Option, ParseResult, type Schema, SchemaAST } from "effect"
import { readJsonBody } from "./body.js"
import { errorBody, json } from "./responses.js"

export interface Input<P, U, B> {
  readonly path: P
  readonly urlParams: U
  readonly payload: B
  readonly principal: Principal
}

/** A matched request, as the dispatcher hands it to a route. */
export interface Matched {
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly pathname: string
  readonly principal: Principal | null
}

export interface Route<R> {
  readonly method: HttpMethod.HttpMethod
  /** The endpoint's path with its parameters named, e.g. /v1/intake-bots/:id (for the logs). */
  readonly path: string
  readonly pattern: RegExp
  readonly names: ReadonlyArray<string>
  readonly run: (matched: Matched) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>
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

/** One issue per path (a union reports one per member; the first says enough). */
const issuesOf = (error: ParseResult.ParseIssue) => {
  const byPath = new Map<string, string>()
  for (const issue of ParseResult.ArrayFormatter.formatIssueSync(error)) {
    const path = issue.path.map(String).join(".")
    if (!byPath.has(path)) byPath.set(path, issue.message)
  }
  return [...byPath].map(([path, message]) => ({ path, message }))
}

const decodeWith = <A>(
  schema: Schema.Schema<A, unknown, never>,
  input: unknown
): Effect.Effect<A, ValidationFailed> =>
  Effect.mapError(ParseResult.decodeUnknown(schema)(input, { errors: "all" }), (error) =>
    invalid(issuesOf(error))
  )

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
          unknown.map((key) => ({ path: key, message: "is not a field of this request" })),
          { unknownKeys: unknown }
        )
      )
}

/** The answers an idempotency record keeps: a failure once the operation started (not 400/422/500). */
const storedFailure = (error: unknown): StoredResponse | undefined =>
  isApiError(error) && [404, 409, 429].includes(error.httpStatus)
    ? { status: error.httpStatus, body: errorBody(error) }
    : undefined

const idempotencyKey = (request: HttpServerRequest.HttpServerRequest) => {
  const value = request.headers["idempotency-key"]
  if (value === undefined) return Effect.succeed(undefined)
  return IDEMPOTENCY_KEY.test(value)
    ? Effect.succeed(value)
    : Effect.fail(
        invalid([{ path: "Idempotency-Key", message: "must be 1 to 255 printable ASCII characters" }])
      )
}

export interface ServeOptions {
  /** Run POSTs through Idempotency.run when the client sends an Idempotency-Key (API v1 only). */
  readonly idempotent: boolean
  /** The operation calls out (sends a webhook): idempotency must keep it outside any transaction. */
  readonly callsOut?: boolean
}

/**
 * One endpoint of packages/api served by `handler`, which receives the decoded path,
 * query and body and returns the endpoint's success value (encoded with its schema).
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
  handler: (input: Input<P, U, B>) => Effect.Effect<A, EH, RH>,
  options: ServeOptions
): Route<RH | Access | Idempotency | HttpServerRequest.HttpServerRequest> => {
  const { pattern, names } = compile(endpoint.path)
  const scope = Context.getOption(endpoint.annotations as Context.Context<RequiredScope>, RequiredScope)
  const payloadSchema = endpoint.payloadSchema as Option.Option<Schema.Schema<B, unknown, never>>
  const known = Option.match(payloadSchema, { onNone: () => undefined, onSome: knownKeys })
  const successSchema = endpoint.successSchema as Schema.Schema<A, unknown, never>
  const status = HttpApiSchema.getStatusSuccess(successSchema)
  const encodeSuccess = (value: A) =>
    Effect.orDie(ParseResult.encodeUnknown(successSchema)(value)).pipe(
      Effect.map((body): StoredResponse => ({ status, body }))
    )

  const run = (matched: Matched) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const principal = matched.principal
      if (principal !== null && Option.isSome(scope)) {
        yield* (yield* Access).requireScope(principal, scope.value)
      }
      // Idempotency-Key applies to POST only; on other methods the header is ignored.
      const key =
        options.idempotent && principal !== null && request.method === "POST"
          ? yield* idempotencyKey(request)
          : undefined
      const path = Option.isSome(endpoint.pathSchema)
        ? yield* decodeWith(endpoint.pathSchema.value as Schema.Schema<P, unknown, never>, matched.params)
        : (matched.params as P)
      const urlParams = Option.isSome(endpoint.urlParamsSchema)
        ? yield* decodeWith(
            endpoint.urlParamsSchema.value as Schema.Schema<U, unknown, never>,
            Object.fromEntries(matched.query)
          )
        : ({} as U)
      let raw: unknown
      let payload = undefined as B
      if (Option.isSome(payloadSchema)) {
        raw = yield* readJsonBody(request)
        yield* rejectUnknownKeys(raw, known)
        payload = yield* decodeWith(payloadSchema.value, raw)
      }
      const operation = Effect.flatMap(
        handler({ path, urlParams, payload, principal: principal as Principal }),
        encodeSuccess
      )
      if (key === undefined || principal === null) {
        const answer = yield* operation
        return json(answer.body, answer.status)
      }
      const idempotency = yield* Idempotency
      const outcome = yield* (
        options.callsOut === true ? idempotency.runOutsideTransaction : idempotency.run
      )(
        {
          apiKeyId: principal.apiKey.id,
          key,
          fingerprint: idempotency.fingerprint(request.method, matched.pathname, raw ?? null)
        },
        operation,
        { onSuccess: (answer) => answer, onFailure: storedFailure }
      )
      return outcome._tag === "Fresh"
        ? json(outcome.value.body, outcome.value.status)
        : HttpServerResponse.setHeader(
            json(outcome.response.body, outcome.response.status),
            "idempotent-replayed",
            "true"
          )
    })

  return { method: endpoint.method, path: endpoint.path, pattern, names, run }
}
