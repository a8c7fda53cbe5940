/**
 * The client against the contract (packages/api): the same operations (name, method, path),
 * and, at compile time (`pnpm typecheck`), the same wire types. A change to the contract that
 * the client does not follow fails here.
 */
import type * as Api from "@intake/api"
import { servedEndpoints } from "@intake/api"
import { describe, expect, it } from "vitest"
import type * as Client from "../src/index.js"
import { operations } from "../src/index.js"

/** A and B are the same type (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/** What the client sends is something the server accepts. */
type Accepted<ClientBody, ServerBody> = [ClientBody] extends [ServerBody] ? true : false

type DataOf<T extends { readonly data: unknown }> = T["data"]

const sameWireTypes: [
  Same<Client.IntakeBotListPage, DataOf<Api.IntakeBotListEncoded>>,
  Same<Client.IntakeBot, DataOf<Api.IntakeBotOneEncoded>["intake_bot"]>,
  Same<Client.SubmissionListPage, DataOf<Api.SubmissionListEncoded>>,
  Same<Client.Submission, DataOf<Api.SubmissionOneEncoded>["submission"]>,
  Same<Client.CreatedSubmission, DataOf<Api.SubmissionCreatedEncoded>["submission"]>,
  Same<Client.WebhookListPage, DataOf<Api.WebhookListEncoded>>,
  Same<Client.Webhook, DataOf<Api.WebhookOneEncoded>["webhook"]>,
  Same<Client.WebhookWithSecret, DataOf<Api.WebhookCreatedEncoded>["webhook"]>,
  Same<Client.WebhookWithSecret, DataOf<Api.WebhookSecretRotatedEncoded>["webhook"]>,
  Same<Client.Deleted, DataOf<Api.DeletedEncoded>>,
  Same<Client.Delivery, DataOf<Api.DeliveryOneEncoded>["delivery"]>,
  Same<Client.DeliveryListPage, DataOf<Api.DeliveryListEncoded>>,
  Same<Client.Recovery, DataOf<Api.RecoveryOneEncoded>["recovery"]>,
  Same<Client.WebhookEvent, typeof Api.WebhookEvent.Encoded>,
  Same<Client.ApiError, typeof Api.ApiErrorWire.Encoded>,
  Accepted<Client.CreateSubmissionBody, Api.CreateSubmissionBodyEncoded>,
  Accepted<Client.CreateWebhookBody, Api.CreateWebhookBodyEncoded>,
  Accepted<Client.UpdateWebhookBody, Api.UpdateWebhookBodyEncoded>,
  Accepted<Client.RotateWebhookSecretBody, Api.RotateWebhookSecretBodyEncoded>,
  Accepted<Client.RecoverWebhookBody, Api.RecoverWebhookBodyEncoded>
] = [
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true
]

describe("@intake/client against the contract", () => {
  it("has one method per v1 operation, with the contract's method and path", () => {
    expect(sameWireTypes.every((same) => same)).toBe(true)
    expect(operations).toEqual(
      Object.fromEntries(
        servedEndpoints.map((endpoint) => [endpoint.name, { method: endpoint.method, path: endpoint.path }])
      )
    )
  })
})
