/**
 * What a dispatcher's cycle costs PostgreSQL in round trips, counted at the driver once the
 * connection has prepared its statements (docs/webhooks.md, "How the engine sends"): a
 * claim is two (BEGIN, the endpoints' claim locks and their backlogs in one write; the
 * lease, with what sending needs, and the COMMIT in the next), and a batch of finished
 * attempts two (BEGIN and the endpoints' row locks; the records, retries and endpoint state
 * with the COMMIT).
 */
import { expect, layer } from "@effect/vitest"
import {
  Deliveries,
  DeliverySettings,
  IntakeBots,
  Provisioning,
  Submissions,
  UseCasesLive,
  WebhookSettings,
  Webhooks
} from "@intake/domain"
import { DeliveriesLive } from "@intake/domain/internal"
import { newIntakeBot, receiverDouble, validSubmissionData } from "@intake/testing"
import { Duration, Effect, Layer } from "effect"
import { instancePortsOn, PostgresTestDatabase } from "../src/testing.js"
import { statementsOf } from "./statements.js"
import { describePostgres } from "./support.js"

const receiver = receiverDouble()

const runtime = Layer.mergeAll(UseCasesLive, DeliveriesLive).pipe(
  Layer.provideMerge(instancePortsOn(PostgresTestDatabase())),
  Layer.provide(
    Layer.mergeAll(
      receiver.layer,
      WebhookSettings.layer({ allowPrivateNetworks: false }),
      DeliverySettings.layer({})
    )
  )
)

/** The statements `work` sends, each one round trip. */
const counted = <A, E>(work: Effect.Effect<A, E, Deliveries>) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<Deliveries>()
    const { value, statements } = yield* Effect.promise(() =>
      statementsOf(() => Effect.runPromise(Effect.provide(work, context)))
    )
    return { value, statements }
  })

describePostgres("on PostgreSQL", () =>
  layer(runtime, { timeout: Duration.seconds(120) })("round trips of a dispatcher's cycle", (it) => {
    it.effect("a claim takes two round trips, and writing down a batch two", () =>
      Effect.gen(function* () {
        const workspace = yield* (yield* Provisioning).createWorkspace({ name: "Acme", plan: "pro" })
        const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
        // A public address as it is: no name to resolve, and the receiver is a double.
        yield* (yield* Webhooks).create(workspace.id, {
          url: "https://93.184.216.34/hooks",
          events: ["submission.completed"]
        })
        const deliveries = yield* Deliveries
        const cycle = Effect.gen(function* () {
          for (let i = 0; i < 3; i++)
            yield* (yield* Submissions).create(workspace.id, bot.id, { data: validSubmissionData() })
          const token = `claim-${Math.random()}`
          const claim = yield* counted(deliveries.claim(10, token))
          const { deliveries: claimed, claimedAt, sources } = claim.value
          expect(claimed).toHaveLength(3)
          const prepared = yield* deliveries.prepare(claimed, claimedAt, sources)
          const made = yield* Effect.forEach(prepared, deliveries.attempt)
          const record = yield* counted(deliveries.record(made, token))
          expect(record.value.map((d) => d.status)).toEqual(["succeeded", "succeeded", "succeeded"])
          return { claim: claim.statements, record: record.statements }
        })
        // The first cycle prepares the statements on the connection; the second is measured.
        yield* cycle
        const { claim, record } = yield* cycle
        expect(claim, claim.join("\n")).toHaveLength(2)
        expect(claim[0]).toMatch(
          /^BEGIN \+ SELECT FROM \(SELECT count\(\*\) AS locked .* \+ SELECT q\.webhook_id/
        )
        expect(claim[1]).toMatch(/^WITH leased AS .* \+ COMMIT$/)
        expect(record, record.join("\n")).toHaveLength(2)
        expect(record[0]).toMatch(/^BEGIN \+ SELECT \* FROM webhook_endpoints WHERE id = ANY/)
        expect(record[1]).toMatch(/^WITH input AS .* \+ COMMIT$/)
      })
    )
  })
)
