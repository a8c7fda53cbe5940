/**
 * The model summarizer: the Summarizer port on Effect's AI packages (`@effect/ai` with
 * `@effect/ai-openai`), which call the OpenAI Responses API (`POST {url}/responses`) and
 * decode its answer strictly. OpenAI itself, or any server that speaks that API, is
 * reached through the URL. Failures come back as a category (SummaryUnavailable), never
 * with the server's text or the request, whose Authorization header carries the key.
 */
import { type AiError, LanguageModel, Prompt } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { ModelSummary, Summarizer, type SummaryInput, SummaryUnavailable } from "@intake/domain/internal"
import { Effect, Layer, Option, type Redacted } from "effect"

export interface ModelSummarizerOptions {
  /** The API base; `/responses` is appended. */
  readonly url: string
  readonly model: string
  /** Sent as `Authorization: Bearer …` when present. */
  readonly apiKey: Option.Option<Redacted.Redacted>
}

/** The category of an AiError: what a log line and the retry policy need, nothing the server wrote. */
export const failureOf = (error: AiError.AiError): SummaryUnavailable => {
  switch (error._tag) {
    case "HttpRequestError":
      return new SummaryUnavailable({ reason: "unreachable", status: null })
    case "HttpResponseError": {
      const status = error.response.status
      if (error.reason !== "StatusCode") return new SummaryUnavailable({ reason: "malformed", status })
      if (status === 429) return new SummaryUnavailable({ reason: "rate_limited", status })
      return new SummaryUnavailable({ reason: status >= 500 ? "server_error" : "rejected", status })
    }
    default:
      return new SummaryUnavailable({ reason: "malformed", status: null })
  }
}

/** The conversation sent: the rules as the system turn, the submission as data in the user turn. */
export const summaryPrompt = (input: SummaryInput): Prompt.Prompt =>
  Prompt.fromMessages([
    Prompt.makeMessage("system", { content: ModelSummary.SUMMARY_INSTRUCTIONS }),
    Prompt.makeMessage("user", {
      content: [Prompt.makePart("text", { text: ModelSummary.summaryPromptData(input) })]
    })
  ])

export const ModelSummarizer = (options: ModelSummarizerOptions) =>
  Layer.effect(
    Summarizer,
    Effect.map(LanguageModel.LanguageModel, (model) =>
      Summarizer.of({
        kind: "model",
        summarize: (input) =>
          model.generateText({ prompt: summaryPrompt(input) }).pipe(
            Effect.map((response) => response.text),
            Effect.mapError(failureOf),
            // A defect inside the client (an answer it did not expect) is an unusable answer too.
            Effect.catchAllDefect(() =>
              Effect.fail(new SummaryUnavailable({ reason: "malformed", status: null }))
            )
          )
      })
    )
  ).pipe(
    Layer.provide(
      OpenAiLanguageModel.layer({
        model: options.model,
        // Nothing kept on the provider's side; room for a short answer, not an essay.
        config: { store: false, max_output_tokens: 400 }
      })
    ),
    Layer.provide(
      OpenAiClient.layer({
        apiUrl: options.url.replace(/\/+$/, ""),
        ...(Option.isSome(options.apiKey) ? { apiKey: options.apiKey.value } : {})
      })
    ),
    Layer.provide(NodeHttpClient.layer)
  )
