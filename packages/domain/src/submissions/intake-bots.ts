/** The IntakeBots use cases: workspace-scoped reads for the API, create and update for operators. */
import { Clock, Effect, Either, Layer, Option } from "effect"
import { WorkspaceRepository } from "../access/ports.js"
import { invalid, notFound, type ValidationIssue } from "../shared/errors.js"
import { listed, pageRequest } from "../shared/lists.js"
import {
  type BotStatus,
  BotStatus as BotStatusSchema,
  type IntakeBot,
  type SchemaField
} from "../shared/models.js"
import { Crypto, Ids, UnitOfWork } from "../shared/ports.js"
import { schemaChanged, validateSchema } from "./bot-schema.js"
import { IntakeBotCache, IntakeBotCacheLive } from "./intake-bot-cache.js"
import { IntakeBotRepository } from "./ports.js"
import { type IntakeBotChanges, IntakeBots } from "./services.js"
import { generateSlug } from "./share-slug.js"

export const MAX_BOT_NAME_LENGTH = 200
export const MAX_BOT_DESCRIPTION_LENGTH = 2_000
/** Slug collisions among 62^8 values are rare; a handful of retries is plenty. */
const SLUG_ATTEMPTS = 10

const botStatuses: ReadonlyArray<string> = BotStatusSchema.literals

/** Issues with the plain properties of a bot (name, description, status), present ones only. */
const propertyIssues = (input: IntakeBotChanges): Array<ValidationIssue> => {
  const issues: Array<ValidationIssue> = []
  if (input.name !== undefined) {
    if (typeof input.name !== "string" || input.name.trim() === "")
      issues.push({ path: "name", message: "must be a non-empty string" })
    else if (input.name.length > MAX_BOT_NAME_LENGTH)
      issues.push({ path: "name", message: `must be at most ${MAX_BOT_NAME_LENGTH} characters` })
  }
  if (input.description !== undefined) {
    if (typeof input.description !== "string")
      issues.push({ path: "description", message: "must be a string" })
    else if (input.description.length > MAX_BOT_DESCRIPTION_LENGTH)
      issues.push({
        path: "description",
        message: `must be at most ${MAX_BOT_DESCRIPTION_LENGTH} characters`
      })
  }
  if (input.status !== undefined && !botStatuses.includes(input.status))
    issues.push({ path: "status", message: `must be one of: ${botStatuses.join(", ")}` })
  return issues
}

/**
 * Validates properties and (when given) the schema together, so one answer names every
 * problem; `creating` makes name and schema required.
 */
const validateChanges = (input: IntakeBotChanges, creating: boolean) => {
  const issues = propertyIssues(input)
  if (creating && input.name === undefined) issues.unshift({ path: "name", message: "is required" })
  if (creating && input.schema === undefined) issues.push({ path: "schema", message: "is required" })
  let schema: ReadonlyArray<SchemaField> | undefined
  if (input.schema !== undefined) {
    const result = validateSchema(input.schema)
    if (Either.isLeft(result)) issues.push(...result.left.issues)
    else schema = result.right
  }
  return issues.length > 0 ? Effect.fail(invalid(issues)) : Effect.succeed(schema)
}

export const IntakeBotsLive = Layer.effect(
  IntakeBots,
  Effect.gen(function* () {
    const bots = yield* IntakeBotRepository
    const cache = yield* IntakeBotCache
    const workspaces = yield* WorkspaceRepository
    const unitOfWork = yield* UnitOfWork
    const crypto = yield* Crypto
    const ids = yield* Ids

    const uniqueSlug = Effect.gen(function* () {
      for (let attempt = 0; attempt < SLUG_ATTEMPTS; attempt++) {
        const slug = generateSlug(crypto.randomBytes)
        if (!(yield* bots.slugExists(slug))) return slug
      }
      return yield* Effect.dieMessage("no free share slug after repeated attempts")
    })

    return IntakeBots.of({
      list: (workspaceId, query) => {
        const list = `intake_bots:${workspaceId}`
        return pageRequest(crypto, list, query).pipe(
          Effect.flatMap((page) => bots.list(workspaceId, page)),
          Effect.map((page) => listed(crypto, list, page))
        )
      },

      get: (workspaceId, id) =>
        Effect.flatMap(
          cache.findInWorkspace(workspaceId, id),
          Option.match({
            onNone: () => Effect.fail(notFound("intake_bot")),
            onSome: Effect.succeed
          })
        ),

      create: (workspaceId, input) =>
        Effect.gen(function* () {
          const schema = (yield* validateChanges(input, true)) ?? []
          if (Option.isNone(yield* workspaces.findById(workspaceId)))
            return yield* Effect.fail(notFound("workspace"))
          const id = yield* ids.next("bot")
          const now = yield* Clock.currentTimeMillis
          // The slug check and the insert commit together, so two creates cannot take the same slug.
          return yield* unitOfWork.transaction(
            Effect.gen(function* () {
              const bot: IntakeBot = {
                id,
                workspaceId,
                name: input.name,
                description: input.description ?? "",
                status: input.status ?? ("ACTIVE" satisfies BotStatus),
                shareSlug: yield* uniqueSlug,
                schema,
                schemaVersion: 1,
                createdAt: now,
                updatedAt: now
              }
              yield* bots.insert(bot)
              return bot
            })
          )
        }),

      update: (id, changes) =>
        Effect.gen(function* () {
          const schema = yield* validateChanges(changes, false)
          const current = yield* Effect.flatMap(
            bots.findById(id),
            Option.match({
              onNone: () => Effect.fail(notFound("intake_bot")),
              onSome: Effect.succeed
            })
          )
          const grows = schema !== undefined && schemaChanged(current.schema, schema)
          const now = yield* Clock.currentTimeMillis
          const updated: IntakeBot = {
            ...current,
            ...(changes.name === undefined ? {} : { name: changes.name }),
            ...(changes.description === undefined ? {} : { description: changes.description }),
            ...(changes.status === undefined ? {} : { status: changes.status }),
            ...(grows ? { schema, schemaVersion: current.schemaVersion + 1 } : {}),
            updatedAt: now
          }
          yield* bots.update(updated)
          yield* cache.changed(id)
          return updated
        })
    })
  })
).pipe(Layer.provide(IntakeBotCacheLive))
