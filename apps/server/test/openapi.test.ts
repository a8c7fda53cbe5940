/**
 * The document at /openapi.json: valid OpenAPI 3.1, the same routes the server answers
 * (both ways), and complete where a client relies on it.
 */
import { openApiDocument } from "@intake/api"
import { Validator } from "@seriousme/openapi-schema-validator"
import { describe, expect, it } from "vitest"
import { v1Routes } from "../src/handlers-v1.js"

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, read by path
type Json = any

const document = openApiDocument()
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** `GET /v1/intake-bots/{id}` for every route of the server's table, rebuilt from its pattern. */
const servedRoutes = v1Routes.map((route) => {
  let index = 0
  const path = route.pattern.source
    .replace(/^\^/, "")
    .replace(/\\?\/\?\$$/, "")
    .replace(/\(\[\^\\?\/\]\+\)/g, () => `{${route.names[index++]}}`)
    .replace(/\\(.)/g, "$1")
  return `${route.method} ${path}`
})

const documentedOperations = Object.entries(
  document.paths as Record<string, Record<string, unknown>>
).flatMap(([path, item]) =>
  Object.keys(item)
    .filter((method) => METHODS.includes(method))
    .map((method) => `${method.toUpperCase()} ${path}`)
)

const operations = Object.values(document.paths as Record<string, Record<string, Json>>).flatMap((item) =>
  Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, operation]) => ({ method, operation }))
)

const errorCodes = (response: Json): ReadonlyArray<string> =>
  response.content["application/json"].schema.allOf[1].properties.error.properties.code.enum

describe("the OpenAPI document of v1", () => {
  it("is valid OpenAPI 3.1 per @seriousme/openapi-schema-validator", async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(document))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe("3.1")
  })

  it("documents every route the server answers, and no other", () => {
    expect(servedRoutes.length).toBeGreaterThan(0)
    expect([...documentedOperations].sort()).toEqual([...servedRoutes].sort())
  })

  it("gives every operation its scope, a 401 and a 429 in the error envelope, and the rate-limit headers", () => {
    for (const { operation } of operations) {
      const [scope] = operation["x-required-scopes"]
      expect(scope).toMatch(/^(read|write|manage):/)
      expect(operation.security).toEqual([{ bearer: [scope] }])
      for (const status of ["401", "429"]) {
        expect(operation.responses[status].content["application/json"].schema.allOf[0]).toEqual({
          $ref: "#/components/schemas/ErrorEnvelope"
        })
      }
      expect(errorCodes(operation.responses["401"])).toEqual(["authentication_required"])
      expect(errorCodes(operation.responses["429"])).toContain("rate_limit_exceeded")
      expect(Object.keys(operation.responses["429"].headers)).toContain("Retry-After")
      for (const response of Object.values<Json>(operation.responses)) {
        expect(Object.keys(response.headers)).toEqual(
          expect.arrayContaining([
            "X-Request-Id",
            "X-RateLimit-Limit",
            "X-RateLimit-Remaining",
            "X-RateLimit-Reset",
            "RateLimit-Policy",
            "RateLimit"
          ])
        )
      }
      expect(operation.responses).not.toHaveProperty("400.content.application/json.schema.anyOf")
    }
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
    expect(document.components.schemas).not.toHaveProperty("HttpApiDecodeError")
  })

  it("describes POST submissions: 201, Idempotency-Key, replay header and its own error codes", () => {
    const create = document.paths["/v1/intake-bots/{id}/submissions"].post
    expect(create.security).toEqual([{ bearer: ["write:intake-bots"] }])
    expect(Object.keys(create.responses)).toContain("201")
    expect(create.responses["201"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/SubmissionCreated"
    })
    expect(Object.keys(create.responses["201"].headers)).toContain("Idempotent-Replayed")
    expect(create.parameters).toContainEqual(
      expect.objectContaining({ in: "header", name: "Idempotency-Key" })
    )
    expect(errorCodes(create.responses["409"]).slice().sort()).toEqual(["conflict", "idempotency_conflict"])
    expect(errorCodes(create.responses["429"]).slice().sort()).toEqual([
      "plan_limit_exceeded",
      "rate_limit_exceeded"
    ])
    expect(create.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/CreateSubmissionBody"
    })
    const success = document.components.schemas.SubmissionCreated
    expect(success.required).toEqual(["success", "data"])
    expect(success.properties.success).toEqual({ type: "boolean", enum: [true] })
    // A GET takes no Idempotency-Key and answers no 409 nor 422.
    const get = document.paths["/v1/intake-bots/{id}"].get
    expect(get.parameters).not.toContainEqual(expect.objectContaining({ name: "Idempotency-Key" }))
    expect(Object.keys(get.responses).sort()).toEqual(["200", "401", "403", "404", "429", "500"])
  })

  it("lists the three webhook events with their payloads and the Standard Webhooks headers", () => {
    expect(Object.keys(document.webhooks).sort()).toEqual([
      "contact.created",
      "submission.completed",
      "webhook.test"
    ])
    for (const item of Object.values<Json>(document.webhooks)) {
      expect(item.post.parameters.map((parameter: Json) => parameter.name)).toEqual([
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature"
      ])
    }
    const completed = document.components.schemas.SubmissionCompletedEvent
    expect(completed.properties.type).toEqual({ type: "string", enum: ["submission.completed"] })
    // The event carries the submission in its single-submission shape: the very schema GET answers.
    expect(completed.properties.data.properties.submission).toEqual({
      $ref: "#/components/schemas/Submission"
    })
  })

  it("names the server relative to the document, so examples carry the host it is served from", () => {
    expect(document.servers).toEqual([{ url: "/", description: expect.any(String) }])
  })

  it("types limit as the integer a client sends, 1 to 100", () => {
    const list = document.paths["/v1/intake-bots/{id}/submissions"].get
    const limit = list.parameters.find((parameter: Json) => parameter.name === "limit")
    const schema = limit.schema.$ref === undefined ? limit.schema : document.components.schemas.Limit
    expect(schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 })
  })
})
