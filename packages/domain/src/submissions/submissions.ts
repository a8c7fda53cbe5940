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
  type StorageUnavailable,
  type ValidationFailed,
  type ValidationIssue,
  withIssues
} from "../shared/errors.js"
import { isEmptyValue, ownValue, type SubmissionData, validateData } from "../shared/field-values.js"
import type { IntakeBotId, SubmissionId, WorkspaceId } from "../shared/ids.js"
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

/** The ports a create writes through, taken once by the layer. */
interface CreatePorts {
  readonly ids: Ids["Type"]
  readonly unitOfWork: UnitOfWork["Type"]
  readonly submissions: SubmissionRepository["Type"]
  readonly contacts: ContactRepository["Type"]
  readonly outbox: EventOutbox["Type"]
  readonly deliveries: DeliveryRepository["Type"]
  readonly wakeups: DeliveryWakeups["Type"]
  readonly summaryJobs: SummaryJobRepository["Type"]
  readonly summaryWakeups: SummaryWakeups["Type"]
  readonly summarySettings: SummarySettings["Type"]
  /** A model summarizer is configured: submission.completed attempts wait for its summary. */
  readonly modelSummaries: boolean
}

/** What a create queued: the attempts sent at once, and those held for the model's summary. */
interface Queued {
  readonly sentAtOnce: number
  readonly held: ReadonlyArray<Delivery>
}

const NOTHING_QUEUED: Queued = { sentAtOnce: 0, held: [] }

/** The input checked against the bot's schema and its status: the failure, or the data to store. */
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

/** The submission and its messages, created at `now`, with the built-in summary. */
const newSubmission = (
  bot: IntakeBot,
  input: NewSubmission,
  status: Submission["status"],
  data: SubmissionData,
  now: number,
  ids: Ids["Type"]
): { readonly submission: Submission; readonly messages: ReadonlyArray<Message> } => {
  const id = ids.at("sub", now)
  const submission: Submission = {
    id,
    workspaceId: bot.workspaceId,
    intakeBotId: bot.id,
    data,
    status,
    // The built-in summary is stored at once; a model's replaces it later (summary-jobs.ts).
    aiSummary: summarize(bot.schema, data),
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
  return { submission, messages }
}

/** The contact a COMPLETED submission names, as a candidate created at `now`; null when it names none. */
const contactCandidate = (
  { bot, workspace }: IntakeTarget,
  data: SubmissionData,
  now: number,
  ids: Ids["Type"]
): Contact | null => {
  const details = contactDetails(bot, data)
  return details === null
    ? null
    : {
        id: ids.at("con", now),
        workspaceId: workspace.id,
        email: details.email,
        name: details.name,
        createdAt: now
      }
}

/** The events of a COMPLETED submission: submission.completed, and contact.created when it names a contact. */
const completionEvents = (
  { bot, workspace }: IntakeTarget,
  input: NewSubmission,
  submissionId: SubmissionId,
  contact: Contact | null,
  now: number,
  ids: Ids["Type"]
): ReadonlyArray<DomainEvent> => {
  const event = (type: DomainEvent["type"]): DomainEvent => ({
    id: ids.at("evt", now),
    workspaceId: workspace.id,
    type,
    intakeBotId: bot.id,
    submissionId,
    contactId: contact?.id ?? null,
    ...(input.requestId === undefined ? {} : { requestId: input.requestId }),
    ...(input.traceParent === undefined ? {} : { traceParent: input.traceParent }),
    createdAt: now
  })
  return contact === null
    ? [event("submission.completed")]
    : [event("submission.completed"), event("contact.created")]
}

/**
 * Records the events with their attempts (and the contact, when the submission names one):
 * contact.created and its attempts are stored only if the contact is new
 * (ContactRepository.findOrCreateWithEvents), so the count sent at once may be one too
 * high, and a wake-up too many is harmless. The attempts commit with their events: none is
 * lost, none sent for a rollback.
 */
const recordEvents = (
  ports: CreatePorts,
  { workspace, activeEndpoints, inactiveEndpoints }: IntakeTarget,
  events: ReadonlyArray<DomainEvent>,
  contact: Contact | null,
  now: number
): Effect.Effect<Queued, StorageUnavailable> => {
  // A workspace that gets no deliveries (archived, no API access) queues none.
  const withheld = deliveriesWithheld(workspace) !== null
  const deliveries = withheld ? [] : pendingAttemptsFor(events, activeEndpoints, now, ports.ids)
  // With a model summarizer, submission.completed waits for its summary, at most the set wait.
  const held = ports.modelSummaries
    ? deliveries.filter((delivery) => delivery.eventType === "submission.completed")
    : []
  // Paused and disabled endpoints get a skipped attempt: the log says why, recover sends it.
  const skipped = withheld ? [] : skippedAttemptsFor(events, inactiveEndpoints, now, ports.ids)
  const queuedNow: QueuedDeliveries = {
    deliveries: [
      ...(held.length === 0 ? deliveries : deliveries.filter((delivery) => !held.includes(delivery))),
      ...skipped
    ],
    dueAt: now
  }
  const appended =
    contact === null
      ? ports.outbox.append(events, queuedNow)
      : ports.contacts.findOrCreateWithEvents(contact, events, queuedNow)
  const queued: Queued = { sentAtOnce: deliveries.length - held.length, held }
  return held.length === 0
    ? Effect.as(appended, queued)
    : Effect.zipRight(
        appended,
        Effect.as(ports.deliveries.enqueue(held, now + ports.summarySettings.deliveryWaitMs), queued)
      )
}

/** Queues the model's summary job, which lets the held attempts go when it ends (summary-jobs.ts). */
const queueSummaryJob = (
  ports: CreatePorts,
  { bot, workspace }: IntakeTarget,
  submissionId: SubmissionId,
  held: ReadonlyArray<Delivery>,
  now: number
) =>
  ports.summaryJobs.enqueue(
    {
      submissionId,
      workspaceId: workspace.id,
      intakeBotId: bot.id,
      attempts: 0,
      heldDeliveryIds: held.map((delivery) => delivery.id),
      createdAt: now
    },
    now
  )

/**
 * Stores the submission within the workspace's monthly quota (docs/rules.md, Limits and
 * rate limits); past it, the whole unit of work rolls back. It goes last, after a stored
 * response (shared/last-steps.ts), and the COMMIT may go with it, so the usage counter
 * stays locked for the commit only (docs/performance.md, Round trips of a create).
 */
const storeWithinQuota = (
  ports: CreatePorts,
  workspace: IntakeTarget["workspace"],
  submission: Submission,
  messages: ReadonlyArray<Message>,
  now: number
) =>
  lastInUnitOfWork(
    ports.unitOfWork.commitWith(
      ports.submissions.insertWithinQuota(submission, messages, {
        period: periodOf(now),
        max: monthlySubmissionQuota(workspace)
      })
    )
  )

/** Wakes the dispatchers when attempts are due now; held ones wait for the summary job, which is woken. */
const wakeWorkers = (ports: CreatePorts, queued: Queued) => {
  const notified = queued.sentAtOnce > 0 ? ports.wakeups.notify : Effect.void
  return ports.modelSummaries ? Effect.zipRight(ports.summaryWakeups.notify, notified) : notified
}

/**
 * Creates a submission for `target`, as a chain of the steps above, not a generator: a
 * create is the busiest write (docs/performance.md, The request path). Its ids come from
 * one read of the clock; its writes are one unit of work, each one statement on PostgreSQL.
 */
const createFor = (
  ports: CreatePorts,
  target: IntakeTarget,
  input: NewSubmission
): ReturnType<Submissions["Type"]["create"]> => {
  const status = input.status ?? "COMPLETED"
  // Validate against the bot's schema (and its status).
  const data = checked(target.bot, input, status)
  if (Either.isLeft(data)) return Effect.fail(data.left)
  return Effect.flatMap(Clock.currentTimeMillis, (now) => {
    // Build the submission, its contact and its events, ids in that order.
    const { submission, messages } = newSubmission(target.bot, input, status, data.right, now, ports.ids)
    const completed = status === "COMPLETED"
    const contact = completed ? contactCandidate(target, data.right, now, ports.ids) : null
    const events = completed ? completionEvents(target, input, submission.id, contact, now, ports.ids) : []
    // Record the events with their attempts; a model's summary job; the submission within the quota, last.
    const recorded = completed
      ? recordEvents(ports, target, events, contact, now)
      : Effect.succeed(NOTHING_QUEUED)
    const stored = storeWithinQuota(ports, target.workspace, submission, messages, now)
    const unit = ports.unitOfWork.transaction(
      Effect.flatMap(recorded, (queued) =>
        Effect.as(
          ports.modelSummaries
            ? Effect.zipRight(queueSummaryJob(ports, target, submission.id, queued.held, now), stored)
            : stored,
          queued
        )
      )
    )
    // Answer the submission once committed, after waking whoever has work now.
    const detail: CreatedSubmission = { ...submission, messages, completedEventId: events[0]?.id ?? null }
    return Effect.flatMap(unit, (queued) => Effect.as(wakeWorkers(ports, queued), detail))
  })
}

export const SubmissionsLive = Layer.effect(
  Submissions,
  Effect.gen(function* () {
    const bots = yield* IntakeBotRepository
    const cache = yield* IntakeBotCache
    const submissions = yield* SubmissionRepository
    const crypto = yield* Crypto
    const summarizer = yield* Summarizer
    const ports: CreatePorts = {
      ids: yield* Ids,
      unitOfWork: yield* UnitOfWork,
      submissions,
      contacts: yield* ContactRepository,
      outbox: yield* EventOutbox,
      deliveries: yield* DeliveryRepository,
      wakeups: yield* DeliveryWakeups,
      summaryJobs: yield* SummaryJobRepository,
      summaryWakeups: yield* SummaryWakeups,
      summarySettings: yield* SummarySettings,
      modelSummaries: summarizer.kind === "model"
    }

    const botInWorkspace = (workspaceId: WorkspaceId, id: IntakeBotId) =>
      Effect.flatMap(
        bots.findInWorkspace(workspaceId, id),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

    // Lists read the bot (its schema) through the cache; creating a submission does not.
    const cachedBotInWorkspace = (workspaceId: WorkspaceId, id: IntakeBotId) =>
      Effect.flatMap(
        cache.findInWorkspace(workspaceId, id),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

    const intakeTarget = (intakeBotId: IntakeBotId, workspaceId: WorkspaceId | null) =>
      Effect.flatMap(
        bots.findIntakeTarget(intakeBotId, workspaceId),
        Option.match({
          onNone: () => Effect.fail(notFound("intake_bot")),
          onSome: Effect.succeed
        })
      )

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
        Effect.flatMap(intakeTarget(intakeBotId, workspaceId), (target) => createFor(ports, target, input)),

      createForBot: (intakeBotId, input) =>
        Effect.flatMap(intakeTarget(intakeBotId, null), (target) => createFor(ports, target, input)),

      remove: (id) =>
        Effect.flatMap(submissions.delete(id), (existed) =>
          existed ? Effect.void : Effect.fail(notFound("submission"))
        )
    })
  })
).pipe(Layer.provide(IntakeBotCacheLive))
