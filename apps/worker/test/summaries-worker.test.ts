/**
 * A worker process (`src/main.ts`) with INTAKE_SUMMARIZER=openai runs the summary jobs a
 * server queued on the shared database: the model's summary lands on the submission and
 * in the delivery, and the API key appears nowhere in what the worker prints.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { Submissions, UseCasesLive, WebhookSettings } from "@intake/domain"
import { ModelSummarizer } from "@intake/node/model-summarizer"
import { freshDatabaseUrl, instancePortsOn } from "@intake/postgres/testing"
import { modelServer } from "@intake/testing"
import { Effect, Layer, Option, Redacted } from "effect"
import {
  describePostgres,
  givenEndpoint,
  slowReceiver,
  startWorker,
  waitUntil,
  workerEnv
} from "./processes.js"

const API_KEY = "sk-proj-worker-test-0123456789-never-printed"

describePostgres("a worker process with a model summarizer", () => {
  it.live(
    "finishes the summary jobs a server queued, and delivers with the model's summary",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabaseUrl()
        const model = yield* modelServer({
          kind: "answer",
          text: "Lead from ada@example.com, written by the model."
        })
        const receiver = yield* slowReceiver(0)
        // A server's use cases: submissions queue summary jobs; no runner here, so only the worker runs them.
        const services = yield* Layer.build(
          UseCasesLive.pipe(
            Layer.provideMerge(
              Layer.mergeAll(
                Layer.merge(
                  instancePortsOn(PgClient.layer({ url: Redacted.make(database.url) })),
                  ModelSummarizer({ url: model.url, model: "gpt-4.1-mini", apiKey: Option.none() })
                ),
                WebhookSettings.layer({ allowPrivateNetworks: true })
              )
            )
          )
        )
        const worker = yield* startWorker(
          workerEnv(database.url, {
            INTAKE_SUMMARIZER: "openai",
            INTAKE_SUMMARIZER_URL: model.url,
            INTAKE_SUMMARIZER_MODEL: "gpt-4.1-mini",
            INTAKE_SUMMARIZER_API_KEY: API_KEY,
            LOG_LEVEL: "debug"
          })
        )
        const submission = yield* Effect.provide(
          Effect.gen(function* () {
            const { bot } = yield* givenEndpoint(receiver.url)
            return yield* (yield* Submissions).create(bot.workspaceId, bot.id, {
              data: { email: "ada@example.com" }
            })
          }),
          services
        )
        expect(submission.aiSummary).toBe("Email: ada@example.com")
        yield* waitUntil(() => receiver.received.length === 1, 15_000, worker.output)
        const payload = JSON.parse(receiver.received[0]!.body)
        expect(payload.data.submission.id).toBe(submission.id)
        expect(payload.data.submission.ai_summary).toBe("Lead from ada@example.com, written by the model.")
        expect(model.requests).toHaveLength(1)
        expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`)
        expect(worker.output()).not.toContain(API_KEY)
      }).pipe(Effect.scoped),
    60_000
  )
})
