/**
 * The contract suites check every answer of a repository against the domain's schemas
 * (models.ts): `checkedStores(layer)` wraps the stores under test so that each call a case
 * makes has its answer validated, excess fields refused, before the case reads it.
 * A store that answers a wrong shape (a missing field, a string for a number, a column
 * left over from its row) fails on every case that calls it, on every store.
 */
import {
  ApiKey,
  ApiKeyRepository,
  Contact,
  ContactRepository,
  Delivery,
  DeliveryRepository,
  DomainEvent,
  EpochMillis,
  EventOutbox,
  IntakeBot,
  IntakeBotRepository,
  Message,
  Submission,
  SubmissionRepository,
  UsageCounters,
  WebhookEndpoint,
  WebhookRepository,
  WebhookStatus,
  Workspace,
  WorkspaceRepository
} from "@intake/domain"
import { Context, Effect, Either, Layer, Option, ParseResult, Schema } from "effect"

/** A schema of an answer, checked on its decoded (domain) side. */
// biome-ignore lint/suspicious/noExplicitAny: an answer shape is any schema of the answer's type
export type AnswerShape = Schema.Schema<any, any, never>

/** The answer shapes of a service's methods (those answering nothing need none). */
export type AnswerShapes<S> = {
  readonly [K in keyof S]?: AnswerShape
}

/** A page of a list: its items and whether more follow. */
export const PageOf = (item: AnswerShape) =>
  Schema.Struct({ items: Schema.Array(item), hasMore: Schema.Boolean })

/** Some or none of a model. */
export const OptionOf = (item: AnswerShape) => Schema.OptionFromSelf(item)

/** A bot on its workspace's list: with its submission count. */
export const IntakeBotListItemShape = Schema.Struct({ ...IntakeBot.fields, submissionCount: Schema.Number })

/** A submission with its messages. */
export const SubmissionDetailShape = Schema.Struct({ ...Submission.fields, messages: Schema.Array(Message) })

/** A submission on its bot's list: its data as the JSON text of a Submission's data. */
export const SubmissionListItemShape = Schema.Struct({
  ...Submission.omit("data").fields,
  dataJson: Schema.String.pipe(
    Schema.filter(
      (text) =>
        Either.isRight(Schema.decodeEither(Schema.parseJson(Submission.fields.data))(text)) ||
        "not the JSON text of a submission's data"
    )
  ),
  messageCount: Schema.Number
})

/** What taking a submission for a bot reads in one go. */
export const IntakeTargetShape = Schema.Struct({
  bot: IntakeBot,
  workspace: Workspace,
  activeEndpoints: Schema.Array(WebhookEndpoint),
  inactiveEndpoints: Schema.Array(WebhookEndpoint)
})

/** What sending one claimed attempt needs. */
export const DispatchSourcesShape = Schema.Struct({
  endpoint: Schema.NullOr(WebhookEndpoint),
  workspace: Schema.NullOr(Workspace),
  event: Schema.NullOr(DomainEvent),
  submission: Schema.NullOr(SubmissionDetailShape),
  bot: Schema.NullOr(IntakeBot),
  contact: Schema.NullOr(Contact)
})

/** A claim's attempts, with what sending them needs when the store read it with the claim. */
export const ClaimedAttemptsShape = Schema.Struct({
  deliveries: Schema.Array(Delivery),
  more: Schema.Boolean,
  claimedAt: EpochMillis,
  sources: Schema.optional(
    Schema.ReadonlyMapFromSelf({ key: Schema.String, value: Schema.suspend(() => DispatchSourcesShape) })
  )
})

/** Validates `answer` as `shape`'s domain type, excess fields refused; a defect naming `method` if not. */
const check = (method: string, shape: AnswerShape, answer: unknown) => {
  const valid = Schema.validateEither(shape, { onExcessProperty: "error", errors: "all" })(answer)
  if (valid._tag === "Right") return Effect.void
  return Effect.die(
    new Error(
      `${method} answered a shape the domain's schema refuses:\n${ParseResult.TreeFormatter.formatErrorSync(valid.left)}`
    )
  )
}

/** The service with its methods named in `shapes` checked on every answer. */
const checkedService = <S extends object>(key: string, shapes: AnswerShapes<S>, service: S): S => {
  const checked = { ...service } as Record<string, unknown>
  for (const [method, shape] of Object.entries(shapes) as Array<[string, AnswerShape | undefined]>) {
    const original = (service as Record<string, unknown>)[method]
    if (shape === undefined || typeof original !== "function") continue
    checked[method] = (...args: Array<unknown>) =>
      Effect.tap(
        (original as (...args: Array<unknown>) => Effect.Effect<unknown, unknown, unknown>).apply(
          service,
          args
        ),
        (answer) => check(`${key}.${method}`, shape, answer)
      )
  }
  return checked as S
}

const shapesOf = <I, S extends object>(tag: Context.Tag<I, S>, shapes: AnswerShapes<S>) =>
  // biome-ignore lint/suspicious/noExplicitAny: one list of every store's shapes
  ({ tag, shapes }) as unknown as { tag: Context.Tag<any, object>; shapes: AnswerShapes<object> }

/** Each store's methods that answer a domain model, with the model's schema. */
const storeShapes = [
  shapesOf(WorkspaceRepository, { findById: OptionOf(Workspace) }),
  shapesOf(ApiKeyRepository, {
    findByHash: OptionOf(ApiKey),
    findById: OptionOf(ApiKey),
    revoke: OptionOf(ApiKey),
    touchLastUsed: Schema.Boolean
  }),
  shapesOf(IntakeBotRepository, {
    findById: OptionOf(IntakeBot),
    findInWorkspace: OptionOf(IntakeBot),
    findIntakeTarget: OptionOf(IntakeTargetShape),
    list: PageOf(IntakeBotListItemShape),
    existingIds: Schema.Array(Schema.String),
    slugExists: Schema.Boolean
  }),
  shapesOf(SubmissionRepository, {
    findById: OptionOf(Submission),
    findInBot: OptionOf(SubmissionDetailShape),
    list: PageOf(SubmissionListItemShape),
    delete: Schema.Boolean,
    replaceSummary: Schema.Boolean
  }),
  shapesOf(UsageCounters, { reserveSubmission: Schema.Number, submissionsUsed: Schema.Number }),
  shapesOf(ContactRepository, { findById: OptionOf(Contact) }),
  shapesOf(EventOutbox, { findById: OptionOf(DomainEvent) }),
  shapesOf(WebhookRepository, {
    rotateSecret: OptionOf(WebhookEndpoint),
    findInWorkspace: OptionOf(WebhookEndpoint),
    list: PageOf(WebhookEndpoint),
    delete: Schema.Boolean
  }),
  shapesOf(DeliveryRepository, {
    activeEndpoints: Schema.Array(WebhookEndpoint),
    endpoint: OptionOf(WebhookEndpoint),
    claimDue: Schema.Array(Delivery),
    claim: ClaimedAttemptsShape,
    complete: Schema.Boolean,
    completeMany: Schema.Array(Schema.String),
    reserveSend: Schema.NullOr(EpochMillis),
    dispatchSources: Schema.ReadonlyMapFromSelf({ key: Schema.String, value: DispatchSourcesShape }),
    lockEndpoints: Schema.Array(WebhookEndpoint),
    nextDueAt: OptionOf(EpochMillis),
    findInWebhook: OptionOf(Delivery),
    attemptsOf: Schema.Array(Delivery),
    list: PageOf(Delivery),
    lockEndpoint: OptionOf(WebhookEndpoint),
    recoverableEvents: Schema.Array(Schema.Struct({ event: DomainEvent, attemptsMade: Schema.Number })),
    recordOutcome: OptionOf(Schema.Struct({ endpoint: WebhookEndpoint, previousStatus: WebhookStatus }))
  })
]

/**
 * `layer` with each store it gives wrapped: the methods of `storeShapes` checked on every
 * answer, every other service as it is. The contract suites run their cases on it instead
 * of on the store's own layer.
 */
export const checkedStores = <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>): Layer.Layer<ROut, E, RIn> =>
  Layer.effectContext(
    Effect.map(Effect.context<ROut>(), (context) => {
      let checked = context
      for (const { tag, shapes } of storeShapes) {
        const service = Context.getOption(context, tag)
        if (Option.isSome(service))
          checked = Context.add(checked, tag, checkedService(tag.key, shapes, service.value))
      }
      return checked
    })
  ).pipe(Layer.provide(layer))
