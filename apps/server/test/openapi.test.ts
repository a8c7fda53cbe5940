/**
 * The document at /openapi.json: valid OpenAPI 3.1, the same routes the server answers
 * (both ways), and complete where a client relies on it.
 */

import { readFileSync } from "node:fs"
import { join } from "node:path"
import {
  openApiDocument,
  operationExamples,
  servedEndpoints,
  WebhookEvent,
  webhookEventExamples
} from "@intake/api"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Schema } from "effect"
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
  Object.keys(response.content["application/json"].schema.allOf[1].properties.error.discriminator.mapping)

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

  it("lists the four webhook events with their payloads and the Standard Webhooks headers", () => {
    expect(Object.keys(document.webhooks).sort()).toEqual([
      "contact.created",
      "submission.completed",
      "webhook.disabled",
      "webhook.test"
    ])
    const disabled = document.components.schemas.WebhookDisabledEvent
    expect(disabled.properties.data.properties.reason).toMatchObject({
      type: "string",
      enum: ["gone", "failing"]
    })
    expect(Object.keys(disabled.properties.data.properties.webhook.properties)).not.toContain("secret")
    expect(document.components.schemas.WebhookEventName.enum).toContain("webhook.disabled")
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

  it("passes `redocly lint` with the recommended rules: no error and no warning", async () => {
    const problems = await lintFromString({
      source: JSON.stringify(document),
      absoluteRef: "openapi.json",
      config: await createConfig({ extends: ["recommended"] })
    })
    const describe = (problem: (typeof problems)[number]) =>
      `${problem.severity} ${problem.ruleId}: ${problem.message} ${problem.location[0]?.pointer ?? ""}`
    expect(problems.map(describe)).toEqual([])
  }, 30_000)

  it("names the project's license: none granted, as package.json's UNLICENSED", () => {
    const packageJson = JSON.parse(
      readFileSync(join(import.meta.dirname, "..", "..", "..", "package.json"), "utf8")
    )
    expect(packageJson.license).toBe("UNLICENSED")
    expect(document.info.license).toEqual({
      name: expect.stringContaining("UNLICENSED"),
      identifier: expect.stringMatching(/^LicenseRef-[A-Za-z0-9.-]+$/)
    })
  })

  it("requires `success` and `error` in every error answer, in the part that narrows the codes too", () => {
    const envelope = document.components.schemas.ErrorEnvelope
    expect(envelope.required).toEqual(["success", "error"])
    expect(envelope.properties.success).toEqual({ type: "boolean", enum: [false] })
    expect(envelope.additionalProperties).toBe(false)
    for (const { operation } of operations) {
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        if (status.startsWith("2")) continue
        const [base, narrowed] = response.content["application/json"].schema.allOf
        expect(base).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" })
        expect(narrowed, `${operation.operationId} ${status}`).toMatchObject({
          type: "object",
          required: ["success", "error"]
        })
      }
    }
  })

  it("references the WebhookEvent union from the create's callback: what the registered URL receives", () => {
    const callback = document.paths["/v1/webhooks"].post.callbacks.delivery["{$request.body#/url}"].post
    expect(callback.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/WebhookEvent"
    })
    expect(callback.parameters.map((parameter: Json) => parameter.name)).toEqual([
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature"
    ])
    // Each entry of the webhooks section keeps its own event.
    const members = document.components.schemas.WebhookEvent.discriminator.mapping
    for (const [type, item] of Object.entries<Json>(document.webhooks)) {
      expect(item.post.requestBody.content["application/json"].schema, type).toEqual({ $ref: members[type] })
    }
  })

  it("gives every operation a summary, a description, a readable tag with a description, and examples", () => {
    const tags = new Map((document.tags as Array<Json>).map((tag) => [tag.name, tag.description]))
    expect([...tags.keys()]).toEqual(["Intake bots", "Submissions", "Webhook endpoints", "Deliveries"])
    for (const { method, operation } of operations) {
      expect(operation.summary, operation.operationId).toMatch(/^[A-Z][a-z]/)
      expect(operation.description?.length ?? 0, operation.operationId).toBeGreaterThan(40)
      expect(tags.get(operation.tags[0]), operation.operationId).toEqual(expect.any(String))
      const success = Object.entries<Json>(operation.responses).find(([status]) => status.startsWith("2"))![1]
      expect(success.content["application/json"].example, operation.operationId).toMatchObject({
        success: true
      })
      if (method === "post" || method === "patch") {
        const body = operation.requestBody?.content["application/json"]
        if (body !== undefined) expect(body.example, operation.operationId).toBeDefined()
      }
    }
    // The docs page's "try it" sends this body: one the demo "Contact form" bot accepts.
    expect(
      document.paths["/v1/intake-bots/{id}/submissions"].post.requestBody.content["application/json"].example
    ).toEqual({
      data: { name: "Ada Lovelace", email: "ada@example.com", topic: "sales", message: "Hello" },
      status: "COMPLETED"
    })
  })

  it("has examples that the contract's own schemas decode", () => {
    for (const endpoint of servedEndpoints) {
      const examples: { readonly request?: unknown; readonly response: unknown } =
        operationExamples[endpoint.name]
      expect(
        () =>
          Schema.decodeUnknownSync(endpoint.successSchema as Schema.Schema<unknown, unknown>)(
            examples.response
          ),
        endpoint.name
      ).not.toThrow()
      if (examples.request !== undefined) {
        const payload = endpoint.payloadSchema
        expect(payload._tag, endpoint.name).toBe("Some")
        if (payload._tag === "Some") {
          expect(
            () =>
              Schema.decodeUnknownSync(payload.value as Schema.Schema<unknown, unknown>)(examples.request),
            endpoint.name
          ).not.toThrow()
        }
      }
    }
    for (const example of Object.values(webhookEventExamples)) {
      expect(() => Schema.decodeUnknownSync(WebhookEvent)(example)).not.toThrow()
    }
  })

  it("types each error code's details, discriminated by code", () => {
    const schemas = document.components.schemas
    expect(schemas.ErrorEnvelope.properties.error).toEqual({ $ref: "#/components/schemas/ApiError" })
    expect(Object.keys(schemas.ApiError.discriminator.mapping).sort()).toEqual([
      "authentication_required",
      "conflict",
      "feature_not_available",
      "idempotency_conflict",
      "insufficient_scopes",
      "internal_error",
      "plan_limit_exceeded",
      "rate_limit_exceeded",
      "resource_not_found",
      "validation_failed",
      "workspace_archived"
    ])
    expect(schemas.ApiError.discriminator.propertyName).toBe("code")
    const details = (name: string) => schemas[name].properties.details
    expect(details("RateLimitExceededError").properties.retry_after).toEqual({ type: "integer", minimum: 1 })
    expect(details("ResourceNotFoundError").properties.resource.enum).toEqual([
      "intake_bot",
      "submission",
      "webhook",
      "delivery",
      "route"
    ])
    expect(details("PlanLimitExceededError").required).toEqual(["resource", "current", "max"])
    expect(details("InsufficientScopesError").required).toEqual(["required", "granted"])
    expect(details("ValidationFailedError").required).toEqual(["issues"])
    expect(schemas.ConflictError.properties).not.toHaveProperty("details")
    // A 404 of GET /intake-bots/{id} is a resource_not_found, with its details.
    const notFound =
      document.paths["/v1/intake-bots/{id}"].get.responses["404"].content["application/json"].schema
    expect(notFound.allOf[1].properties.error.oneOf).toEqual([
      { $ref: "#/components/schemas/ResourceNotFoundError" }
    ])
  })

  it("uses enums and integers where the contract has them, and one WebhookEvent union", () => {
    const schemas = document.components.schemas
    expect(schemas.CreateWebhookBody.properties.events.items).toEqual({
      $ref: "#/components/schemas/WebhookEventName"
    })
    expect(schemas.WebhookEventName.enum).toEqual([
      "submission.completed",
      "contact.created",
      "webhook.disabled"
    ])
    expect(schemas.Webhook.properties.events.items).toEqual({ $ref: "#/components/schemas/WebhookEventName" })
    expect(schemas.Count).toMatchObject({ type: "integer", minimum: 0 })
    for (const [schema, field] of [
      ["IntakeBotListItem", "submission_count"],
      ["SubmissionListItem", "message_count"],
      ["SubmissionListItem", "file_count"],
      ["Webhook", "consecutive_fails"],
      ["Delivery", "attempt"]
    ] as const) {
      expect(schemas[schema].properties[field], `${schema}.${field}`).toEqual({
        $ref: "#/components/schemas/Count"
      })
    }
    expect(schemas.WebhookEvent.discriminator).toEqual({
      propertyName: "type",
      mapping: {
        "submission.completed": "#/components/schemas/SubmissionCompletedEvent",
        "contact.created": "#/components/schemas/ContactCreatedEvent",
        "webhook.disabled": "#/components/schemas/WebhookDisabledEvent",
        "webhook.test": "#/components/schemas/WebhookTestEvent"
      }
    })
  })
})
