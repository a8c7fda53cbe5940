/**
 * The Submissions use cases (docs/rules.md, Resources and states). Creating one reads the bot with its
 * workspace and webhook endpoints, validates, takes the built-in summary, then in one unit
 * of work finds or creates the contact, appends the events with their delivery attempts
 * and, last, stores the submission within the monthly quota: all of it commits, or none of
 * it. Each of those steps is one port call, one statement on PostgreSQL (docs/performance.md,
 * "Round trips of a create"). With a model summarizer, the same unit of work queues the
 * summary job and holds the submission.completed attempts for it (summaries.ts): no model
 * is ever asked on this path.
 */
import { Clock, Effect, Either, Layer, Option } from "effect"
import { deliveriesWithheld, monthlySubmissionQuota } from "../access/plans.js"
import {
  Conflict,
  invalid,
  notFound,
  type ValidationFailed,
  type ValidationIssue,
  withIssues
} from "../shared/errors.js"
import { isEmptyValue, ownValue, type SubmissionData, validateData } from "../shared/field-values.js"
import { lastInUnitOfWork } from "../shared/last-steps.js"
import { listed, pageRequest } from "../shared/lists.js"
import {
  type Contact,
  type Delivery,
  type DomainEvent,
  type IntakeBot,
  type Message,
  MessageRole,
  type Submission
} from "../shared/models.js"
import { periodOf } from "../shared/period.js"
import { Crypto, Ids, UnitOfWork } from "../shared/ports.js"
import { Summarizer, SummaryJobRepository, SummaryWakeups } from "../summaries/ports.js"
import { summarize } from "../summaries/summary.js"
import { SummarySettings } from "../summaries/summary-settings.js"
import { pendingAttemptsFor, skippedAttemptsFor } from "../webhooks/attempts.js"
import { DeliveryRepository, DeliveryWakeups } from "../webhooks/ports.js"
import { IntakeBotCache, IntakeBotCacheLive } from "./intake-bot-cache.js"
import {
  ContactRepository,
  EventOutbox,
  IntakeBotRepository,
  type IntakeTarget,
  type QueuedDeliveries,
  SubmissionRepository
} from "./ports.js"
import { type CreatedSubmission, type NewSubmission, Submissions } from "./services.js"

export const MAX_MESSAGES = 1_000
export const MAX_MESSAGE_LENGTH = 100_000

const creatableStatuses: ReadonlyArray<string> = ["IN_PROGRESS", "COMPLETED"]
const messageRoles: ReadonlyArray<string> = MessageRole.literals

/** Checks the input around `data`: status, is_test and the messages. */
const inputIssues = (input: NewSubmission): Array<ValidationIssue> => {
  const issues: Array<ValidationIssue> = []
  if (input.status !== undefined && !creatableStatuses.includes(input.status))
    issues.push({ path: "status", message: "must be IN_PROGRESS or COMPLETED" })
  if (input.isTest !== undefined && typeof input.isTest !== "boolean")
    issues.push({ path: "is_test", message: "must be true or false" })
  if (input.messages !== undefined) {
    if (!Array.isArray(input.messages)) issues.push({ path: "messages", message: "must be an array" })
    else if (input.messages.length > MAX_MESSAGES)
      issues.push({ path: "messages", message: `must hold at most ${MAX_MESSAGES} messages` })
    else
      input.messages.forEach((message, index) => {
        if (!messageRoles.includes(message?.role))
          issues.push({
            path: `messages.${index}.role`,
            message: `must be one of: ${messageRoles.join(", ")}`
          })
        if (typeof message?.content !== "string")
          issues.push({ path: `messages.${index}.content`, message: "must be a string" })
        else if (message.content.length > MAX_MESSAGE_LENGTH)
          issues.push({
            path: `messages.${index}.content`,
            message: `must be at most ${MAX_MESSAGE_LENGTH} characters`
          })
      })
  }
  return issues
}

/** The contact a COMPLETED submission names: its first email-type field with a value. */
const contactDetails = (
  bot: IntakeBot,
  data: SubmissionData
): { readonly email: string; readonly name: string | null } | null => {
  const emailField = bot.schema.find(
    (field) => field.type === "email" && !isEmptyValue(ownValue(data, field.name))
  )
  if (emailField === undefined) return null
  const name = bot.schema.some((field) => field.name === "name") ? ownValue(data, "name") : undefined
  return {
    email: ownValue(data, emailField.name) as string,
    name: typeof name === "string" && name.trim() !== "" ? name : null
  }
}

export const SubmissionsLive = Layer.effect(
  Submissions,
  Effect.gen(function* () {
    const bots = yield* IntakeBotRepository
    const cache = yield* IntakeBotCache
    const submissions = yield* SubmissionRepository
    const contacts = yield* ContactRepository
    const outbox = yield* EventOutbox
    const summarizer = yield* Summarizer
    const unitOfWork = yield* UnitOfWork
    const crypto = yield* Crypto
    const ids = yield* Ids
    const wakeups = yield* DeliveryWakeups
    const deliveryRepository = yield* DeliveryRepository
    const summaryJobs = yield* SummaryJobRepository
    const summaryWakeups = yield* SummaryWakeups
    const summarySettings = yield* SummarySettings
    const modelSummaries = summarizer.kind === "model"

    const botInWorkspace = (workspaceId: string, id: string) =>
      Effect.flatMap(
        bots.findInWorkspace(workspaceId, id),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

    // Lists read the bot (its schema) through the cache; creating a submission does not.
    const cachedBotInWorkspace = (workspaceId: string, id: string) =>
      Effect.flatMap(
        cache.findInWorkspace(workspaceId, id),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

    const intakeTarget = (intakeBotId: string, workspaceId: string | null) =>
      Effect.flatMap(
        bots.findIntakeTarget(intakeBotId, workspaceId),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

    /** The input checked against the bot: its failure, or the data to store. */
    const checked = (
      bot: IntakeBot,
      input: NewSubmission,
      status: Submission["status"]
    ): Either.Either<SubmissionData, ValidationFailed | Conflict> => {
      const issues = inputIssues(input)
      const validated = validateData(bot.schema, input.data, status)
      if (Either.isLeft(validated)) {
        return Either.left(issues.length === 0 ? validated.left : withIssues(validated.left, issues))
      }
      if (issues.length > 0) return Either.left(invalid(issues))
      if (bot.status !== "ACTIVE")
        return Either.left(
          new Conflict({ message: `The intake bot is ${bot.status.toLowerCase()} and takes no submissions.` })
        )
      return Either.right(validated.right)
    }

    // A chain of steps, not a generator: a create is the busiest write (docs/performance.md,
    // The request path). Its ids come from one read of the clock.
    const createFor = (
      { bot, workspace, activeEndpoints, inactiveEndpoints }: IntakeTarget,
      input: NewSubmission
    ): ReturnType<Submissions["Type"]["create"]> => {
      const status = input.status ?? "COMPLETED"
      const data = checked(bot, input, status)
      if (Either.isLeft(data)) return Effect.fail(data.left)
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const id = ids.at("sub", now)
        const submission: Submission = {
          id,
          workspaceId: bot.workspaceId,
          intakeBotId: bot.id,
          data: data.right,
          status,
          // The built-in summary is stored at once; a model's replaces it later (summaries.ts).
          aiSummary: summarize(bot.schema, data.right),
          isTest: input.isTest ?? false,
          fileCount: 0,
          schemaVersion: bot.schemaVersion,
          createdAt: now,
          updatedAt: now
        }
        const messages: ReadonlyArray<Message> = (input.messages ?? []).map((message) => ({
          id: ids.at("msg", now),
          submissionId: id,
          role: message.role,
          content: message.content,
          createdAt: now
        }))
        const contactCandidate = status === "COMPLETED" ? contactDetails(bot, data.right) : null
        // A workspace that gets no deliveries (archived, no API access) queues none.
        const withheld = deliveriesWithheld(workspace) !== null

        /**
         * The events of a COMPLETED submission and their attempts, with its contact when it
         * names one: contact.created and its attempts are stored only if the contact is new
         * (ContactRepository.findOrCreateWithEvents), so the count of attempts sent at once
         * may be one too high, and a wake-up too many is harmless.
         */
        const recordCompletion = (contact: Contact | null) => {
          const event = (type: DomainEvent["type"]): DomainEvent => ({
            id: ids.at("evt", now),
            workspaceId: workspace.id,
            type,
            intakeBotId: bot.id,
            submissionId: id,
            contactId: contact?.id ?? null,
            ...(input.requestId === undefined ? {} : { requestId: input.requestId }),
            ...(input.traceParent === undefined ? {} : { traceParent: input.traceParent }),
            createdAt: now
          })
          const events =
            contact === null
              ? [event("submission.completed")]
              : [event("submission.completed"), event("contact.created")]
          completedEventId = events[0]!.id
          const deliveries = withheld ? [] : pendingAttemptsFor(events, activeEndpoints, now, ids)
          // With a model summarizer, submission.completed waits for its summary, at most the set wait.
          const held = modelSummaries
            ? deliveries.filter((delivery) => delivery.eventType === "submission.completed")
            : []
          // Paused and disabled endpoints get a skipped attempt: the log says why, recover sends it.
          const skipped = withheld ? [] : skippedAttemptsFor(events, inactiveEndpoints, now, ids)
          // The attempts commit with their events: none is lost, none sent for a rollback.
          const queuedNow: QueuedDeliveries = {
            deliveries: [
              ...(held.length === 0 ? deliveries : deliveries.filter((delivery) => !held.includes(delivery))),
              ...skipped
            ],
            dueAt: now
          }
          const appended =
            contact === null
              ? outbox.append(events, queuedNow)
              : contacts.findOrCreateWithEvents(contact, events, queuedNow)
          const queued = { sentAtOnce: deliveries.length - held.length, held }
          return held.length === 0
            ? Effect.as(appended, queued)
            : Effect.zipRight(
                appended,
                Effect.as(deliveryRepository.enqueue(held, now + summarySettings.deliveryWaitMs), queued)
              )
        }

        // Set as recordCompletion builds the events (synchronously, below).
        let completedEventId: string | null = null
        const recorded =
          status === "COMPLETED"
            ? recordCompletion(
                contactCandidate === null
                  ? null
                  : {
                      id: ids.at("con", now),
                      workspaceId: workspace.id,
                      email: contactCandidate.email,
                      name: contactCandidate.name,
                      createdAt: now
                    }
              )
            : Effect.succeed({ sentAtOnce: 0, held: [] as ReadonlyArray<Delivery> })
        const withSummaryJob = (queued: { readonly held: ReadonlyArray<Delivery> }) =>
          summaryJobs.enqueue(
            {
              submissionId: id,
              workspaceId: workspace.id,
              intakeBotId: bot.id,
              attempts: 0,
              heldDeliveryIds: queued.held.map((delivery) => delivery.id),
              createdAt: now
            },
            now
          )
        // Last: the workspace's usage counter (and the bot's submission count) stay locked
        // from here to the commit only, so concurrent creates wait on each other briefly;
        // inside an idempotent POST, after its stored response (last-steps.ts), and the
        // commit may go with it (UnitOfWork.commitWith). Past the quota, it fails and the
        // whole unit of work rolls back.
        const stored = lastInUnitOfWork(
          unitOfWork.commitWith(
            submissions.insertWithinQuota(submission, messages, {
              period: periodOf(now),
              max: monthlySubmissionQuota(workspace)
            })
          )
        )
        const unit = unitOfWork.transaction(
          Effect.flatMap(recorded, (queued) =>
            Effect.as(modelSummaries ? Effect.zipRight(withSummaryJob(queued), stored) : stored, queued)
          )
        )
        const detail: CreatedSubmission = { ...submission, messages, completedEventId }
        return Effect.flatMap(unit, (queued) => {
          // Held attempts are not due yet: the summary job wakes the dispatchers when it lets them go.
          const notified = queued.sentAtOnce > 0 ? wakeups.notify : Effect.void
          return Effect.as(
            modelSummaries ? Effect.zipRight(summaryWakeups.notify, notified) : notified,
            detail
          )
        })
      })
    }

    return Submissions.of({
      list: (workspaceId, intakeBotId, query) =>
        Effect.flatMap(cachedBotInWorkspace(workspaceId, intakeBotId), (bot) => {
          const list = `submissions:${bot.id}`
          return Effect.flatMap(pageRequest(crypto, list, query), (page) =>
            Effect.map(
              submissions.list(workspaceId, bot.id, page, {
                createdAfter: query.createdAfter,
                createdBefore: query.createdBefore
              }),
              (found) => ({ submissions: listed(crypto, list, found), schema: bot.schema })
            )
          )
        }),

      get: (workspaceId, intakeBotId, id) =>
        Effect.gen(function* () {
          const bot = yield* botInWorkspace(workspaceId, intakeBotId)
          const found = yield* submissions.findInBot(workspaceId, bot.id, id)
          return yield* Option.match(found, {
            onNone: () => Effect.fail(notFound("submission")),
            onSome: Effect.succeed
          })
        }),

      create: (workspaceId, intakeBotId, input) =>
        Effect.flatMap(intakeTarget(intakeBotId, workspaceId), (target) => createFor(target, input)),

      createForBot: (intakeBotId, input) =>
        Effect.flatMap(intakeTarget(intakeBotId, null), (target) => createFor(target, input)),

      remove: (id) =>
        Effect.flatMap(submissions.delete(id), (existed) =>
          existed ? Effect.void : Effect.fail(notFound("submission"))
        )
    })
  })
).pipe(Layer.provide(IntakeBotCacheLive))
