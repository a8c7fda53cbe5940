/**
 * Branded ids (docs/architecture.md, Branded ids): a workspace's id and a bot's id are both
 * strings at run time, but distinct types, so that arguments given in the wrong order fail
 * to compile. The schemas validate nothing beyond a string; the `make…` constructors turn a
 * string into its brand where it enters (an HTTP path, a row), at no cost: they return their
 * argument, typed.
 */
import { Brand, Schema } from "effect"

export const WorkspaceId = Schema.String.pipe(Schema.brand("WorkspaceId"))
export type WorkspaceId = typeof WorkspaceId.Type
export const IntakeBotId = Schema.String.pipe(Schema.brand("IntakeBotId"))
export type IntakeBotId = typeof IntakeBotId.Type
export const SubmissionId = Schema.String.pipe(Schema.brand("SubmissionId"))
export type SubmissionId = typeof SubmissionId.Type
export const WebhookId = Schema.String.pipe(Schema.brand("WebhookId"))
export type WebhookId = typeof WebhookId.Type
export const DeliveryId = Schema.String.pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type
export const ApiKeyId = Schema.String.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type

/** A string as the id it is, unchecked (the edges' one conversion each). */
export const makeWorkspaceId = Brand.nominal<WorkspaceId>()
export const makeIntakeBotId = Brand.nominal<IntakeBotId>()
export const makeSubmissionId = Brand.nominal<SubmissionId>()
export const makeWebhookId = Brand.nominal<WebhookId>()
export const makeDeliveryId = Brand.nominal<DeliveryId>()
export const makeApiKeyId = Brand.nominal<ApiKeyId>()

export const IdPrefix = Schema.Literal("ws", "key", "bot", "sub", "msg", "wh", "evt", "dlv", "con")
export type IdPrefix = typeof IdPrefix.Type

/** The id type `Ids.next` and `Ids.at` answer for each prefix: the brand, or a plain string. */
export interface IdOfPrefix extends Record<IdPrefix, string> {
  readonly ws: WorkspaceId
  readonly key: ApiKeyId
  readonly bot: IntakeBotId
  readonly sub: SubmissionId
  readonly msg: string
  readonly wh: WebhookId
  readonly evt: string
  readonly dlv: DeliveryId
  readonly con: string
}

/**
 * The id `prefix_body` as the brand of its prefix: where an `Ids` implementation makes an
 * id, so that a new record's id is branded where it is made.
 */
export const prefixedId = <P extends IdPrefix>(prefix: P, body: string): IdOfPrefix[P] =>
  `${prefix}_${body}` as IdOfPrefix[P]
