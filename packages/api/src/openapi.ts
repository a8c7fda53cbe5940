/**
 * The OpenAPI 3.1 document of API v1, generated from `IntakeApi` and completed with what
 * the server's pipeline adds around every endpoint: the error envelope with the codes each
 * endpoint can answer, the scope it needs, the rate-limit, request-id and idempotency
 * headers, and the webhook payloads. HttpApi's generator knows none of these (and declares
 * its own HttpApiDecodeError 400, which this server never answers), so the document is
 * rewritten here, from the same endpoint definitions the server routes with.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import * as OpenApiJsonSchema from "@effect/platform/OpenApiJsonSchema"
import { type ErrorCode, errorCatalog } from "@intake/domain"
import { Context, Option, type Schema, SchemaAST } from "effect"
import { WebhookEvent, webhookEvents } from "./events.js"
import { operationExamples, webhookEventExamples } from "./examples.js"
import { type AlternateErrorCode, EndpointErrors, RequiredScope } from "./params.js"
import { IntakeApi, servedEndpoints } from "./v1.js"
import { apiErrors, ErrorEnvelope } from "./wire.js"

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, rewritten in place
type Json = any

/** The codes any /v1 request can meet, whatever the endpoint (docs/rules.md, Checks in order). */
const PIPELINE_ERRORS: ReadonlyArray<ErrorCode> = [
  "authentication_required",
  "workspace_archived",
  "feature_not_available",
  "insufficient_scopes",
  "rate_limit_exceeded",
  "internal_error"
]

/** The catalog's entries, read by code. */
const catalogEntry = (code: ErrorCode): { readonly status: number; readonly meaning: string } =>
  errorCatalog[code]

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema })

const HEADERS: Record<string, Json> = {
  "X-Request-Id": header("Unique id of this request (req_…); quote it when reporting a problem."),
  "X-RateLimit-Limit": header("Requests allowed per 60-second sliding window.", { type: "integer" }),
  "X-RateLimit-Remaining": header("Requests left in the current window.", { type: "integer" }),
  "X-RateLimit-Reset": header("Unix time in milliseconds at which the oldest request leaves the window.", {
    type: "integer"
  }),
  "RateLimit-Policy": header('IETF draft field: `"default";q=<limit>;w=60`.'),
  RateLimit: header('IETF draft field: `"default";r=<remaining>;t=<seconds to reset>`.'),
  "Retry-After": header("Seconds to wait before retrying (at least 1); equals `details.retry_after`.", {
    type: "integer",
    minimum: 1
  }),
  "Idempotent-Replayed": header(
    "`true` when this is the stored answer to an earlier request with the same Idempotency-Key.",
    {
      type: "string",
      enum: ["true"]
    }
  )
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })
const RATE_LIMIT_HEADERS = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "RateLimit-Policy",
  "RateLimit"
]

const responseHeaders = (status: number, idempotent: boolean) =>
  Object.fromEntries(
    [
      "X-Request-Id",
      ...RATE_LIMIT_HEADERS,
      ...(status === 429 ? ["Retry-After"] : []),
      ...(idempotent ? ["Idempotent-Replayed"] : [])
    ].map((name) => [name, headerRef(name)])
  )

/** The error answers of one endpoint, one per status, each naming its codes. */
const errorResponses = (codes: ReadonlyArray<ErrorCode | AlternateErrorCode>, idempotent: boolean) => {
  const byStatus = new Map<number, Array<ErrorCode>>()
  for (const entry of codes) {
    // `validation_failed_422`: the code, answering with its alternate status.
    const alternate = /^(\w+)_(\d{3})$/.exec(entry)
    const code = (alternate === null ? entry : alternate[1]) as ErrorCode
    const status = alternate === null ? catalogEntry(code).status : Number(alternate[2])
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, statusCodes]) => [
        String(status),
        {
          description: statusCodes.map((code) => `\`${code}\`: ${catalogEntry(code).meaning}`).join("; "),
          headers: responseHeaders(status, idempotent),
          "x-error-codes": statusCodes,
          content: { "application/json": { schema: errorEnvelopeOf(statusCodes) } }
        }
      ])
  )
}

const schemaRef = (name: string) => `#/components/schemas/${name}`

/** The component name of each code's error object (its schema's identifier). */
const errorSchemaName = (code: ErrorCode) =>
  Option.getOrThrow(SchemaAST.getIdentifierAnnotation(apiErrors[code].ast))

/** `oneOf` the given members, discriminated by `property` (the members' literal `code` or `type`). */
const discriminated = (property: string, members: ReadonlyArray<readonly [string, string]>) => ({
  oneOf: members.map(([, name]) => ({ $ref: schemaRef(name) })),
  discriminator: {
    propertyName: property,
    mapping: Object.fromEntries(members.map(([value, name]) => [value, schemaRef(name)]))
  }
})

/**
 * The error envelope narrowed to one status: `error` is one of the codes it can carry, typed
 * by code. The narrowing part repeats what is required, so a generator that types each part
 * of an allOf on its own still gets `success` and `error` as required, not optional.
 */
const errorEnvelopeOf = (codes: ReadonlyArray<ErrorCode>) => ({
  allOf: [
    { $ref: schemaRef("ErrorEnvelope") },
    {
      type: "object",
      required: ["success", "error"],
      properties: {
        error: discriminated(
          "code",
          codes.map((code) => [code, errorSchemaName(code)] as const)
        )
      }
    }
  ]
})

/** What the rewrite reads of an endpoint. */
interface Endpoint {
  readonly name: string
  readonly path: string
  readonly method: string
  readonly annotations: Context.Context<never>
}

const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}")

const annotation = <I, S>(endpoint: Endpoint, tag: Context.Tag<I, S>) =>
  Context.get(endpoint.annotations as Context.Context<I>, tag)

const rewriteOperation = (document: Json, endpoint: Endpoint) => {
  const operation = document.paths[openApiPath(endpoint.path)][endpoint.method.toLowerCase()]
  const scope = annotation(endpoint, RequiredScope)
  const idempotent = endpoint.method === "POST"
  operation.security = [{ bearer: [scope] }]
  operation["x-required-scopes"] = [scope]
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in === "header" && parameter.name === "idempotency-key") {
      parameter.name = "Idempotency-Key"
      parameter.description =
        "Makes the POST safe to retry: 1 to 255 printable ASCII characters, scoped to the API key, kept 24 hours."
      parameter.schema = { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" }
    }
  }
  const successes = Object.fromEntries(
    Object.entries(operation.responses as Record<string, Json>)
      .filter(([status]) => status.startsWith("2"))
      .map(([status, response]) => [
        status,
        { ...response, headers: responseHeaders(Number(status), idempotent) }
      ])
  )
  const examples: { readonly request?: unknown; readonly response: unknown } =
    operationExamples[endpoint.name as keyof typeof operationExamples]
  for (const response of Object.values<Json>(successes)) {
    const content = response.content?.["application/json"]
    if (content !== undefined) content.example = examples.response
  }
  const requestContent = operation.requestBody?.content?.["application/json"]
  if (requestContent !== undefined && examples.request !== undefined)
    requestContent.example = examples.request
  operation.responses = {
    ...successes,
    ...errorResponses([...PIPELINE_ERRORS, ...annotation(endpoint, EndpointErrors)], idempotent)
  }
}

const STANDARD_WEBHOOK_HEADERS = [
  {
    name: "webhook-id",
    description: "The event id; the same on every retry and redelivery (deduplicate on it)."
  },
  { name: "webhook-timestamp", description: "Unix seconds of this attempt." },
  {
    name: "webhook-signature",
    description:
      "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the base64-decoded secret (after `whsec_`). During a secret rotation's grace period it holds two such signatures, space-separated, the new secret's first: accept the message when any one verifies."
  }
].map(({ name, description }) => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string" }
}))

const WEBHOOK_ANSWER = { "2XX": { description: "Received; any 2xx answer counts as delivered." } }

const webhooksSection = (schemas: Record<string, Json>) =>
  Object.fromEntries(
    webhookEvents.map(({ type, schema, summary }) => [
      type,
      {
        post: {
          summary,
          description:
            "Sent to each active endpoint subscribed to the event, following Standard Webhooks. Answer 2xx within 10 seconds; other answers are retried.",
          operationId: `webhook.${type}`,
          parameters: STANDARD_WEBHOOK_HEADERS,
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: OpenApiJsonSchema.makeWithDefs(schema as Schema.Schema.Any, { defs: schemas }),
                example: webhookEventExamples[type]
              }
            }
          },
          responses: WEBHOOK_ANSWER
        }
      }
    ])
  )

/**
 * What an endpoint's URL receives once registered: any WebhookEvent it subscribes to, on one
 * URL (an OpenAPI callback of the create). The `webhooks` section has each event on its own;
 * this is the union a receiver types its body with.
 */
const deliveriesCallback = () => ({
  delivery: {
    "{$request.body#/url}": {
      post: {
        summary: "A delivery to the endpoint's URL",
        description:
          "Each event the endpoint subscribes to, one per request, signed per Standard Webhooks (the `webhooks` section describes each event). Answer 2xx within 10 seconds; other answers are retried.",
        operationId: "webhook.delivery",
        security: [],
        parameters: STANDARD_WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: { $ref: schemaRef("WebhookEvent") },
              example: webhookEventExamples["submission.completed"]
            }
          }
        },
        responses: {
          ...WEBHOOK_ANSWER,
          "4XX": {
            description:
              "Not received: retried on the schedule, as any answer but a 2xx; 410 Gone disables the endpoint instead."
          }
        }
      }
    }
  }
})

/** What the document says of its license: none granted, as package.json's `UNLICENSED` says. */
const LICENSE = {
  name: "Proprietary (UNLICENSED): all rights reserved",
  identifier: "LicenseRef-Proprietary"
} as const

/** Components the generator made for shapes the server never answers. */
const UNUSED_SCHEMAS = ["HttpApiDecodeError", "Issue", "PropertyKey"]

const build = (): Json => {
  const document: Json = structuredClone(OpenApi.fromApi(IntakeApi))
  // The project grants no license (package.json: UNLICENSED); SPDX names that LicenseRef-*.
  document.info.license = LICENSE
  document.info.description =
    "Intake API v1. Every answer is an envelope: `{ success: true, data }` or `{ success: false, error: { code, message, details } }`. Authenticate with `Authorization: Bearer svc_live_…`."
  // Relative: the paths are on the host that served this document, wherever it is deployed,
  // so the docs page's examples and "send request" carry the host.
  document.servers = [{ url: "/", description: "The server that serves this document" }]
  const schemas: Record<string, Json> = document.components.schemas
  for (const name of [
    ...UNUSED_SCHEMAS,
    ...Object.keys(schemas).filter((name) => /^Error\d{3}$/.test(name))
  ]) {
    delete schemas[name]
  }
  OpenApiJsonSchema.makeWithDefs(ErrorEnvelope, { defs: schemas })
  schemas.ApiError = discriminated(
    "code",
    (Object.keys(apiErrors) as Array<ErrorCode>).map((code) => [code, errorSchemaName(code)] as const)
  )
  OpenApiJsonSchema.makeWithDefs(WebhookEvent, { defs: schemas })
  schemas.WebhookEvent = {
    description: schemas.WebhookEvent.description,
    ...discriminated(
      "type",
      webhookEvents.map(
        ({ type, schema }) =>
          [type, Option.getOrThrow(SchemaAST.getIdentifierAnnotation(schema.ast))] as const
      )
    )
  }
  document.components.headers = HEADERS
  document.components.securitySchemes.bearer = {
    type: "http",
    scheme: "bearer",
    bearerFormat: "svc_live_…",
    description: "An API key. Each operation names the scope it needs (security and x-required-scopes)."
  }
  for (const endpoint of servedEndpoints) rewriteOperation(document, endpoint)
  document.webhooks = webhooksSection(schemas)
  document.paths["/v1/webhooks"].post.callbacks = deliveriesCallback()
  dropEffectIds(document)
  return document
}

/**
 * Effect marks `Schema.Unknown` and friends with `$id: "/schemas/unknown"`; a document that
 * repeats one `$id` is invalid, so the markers go (the schema `{}` still means "any value").
 */
const dropEffectIds = (node: Json): void => {
  if (Array.isArray(node)) node.forEach(dropEffectIds)
  else if (node !== null && typeof node === "object") {
    if (typeof node.$id === "string" && node.$id.startsWith("/schemas/")) delete node.$id
    Object.values(node).forEach(dropEffectIds)
  }
}

let cached: Json | undefined

/** The OpenAPI 3.1 document served at /openapi.json; built once. */
export const openApiDocument = (): Json => {
  cached ??= build()
  return cached
}
