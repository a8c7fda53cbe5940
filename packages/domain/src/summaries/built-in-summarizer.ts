import { Effect, Layer } from "effect"
import { Summarizer } from "./ports.js"
import { summarize } from "./summary.js"

/** The deterministic summarizer of docs/rules.md, Resources and states: labels and values, at most 280 characters. */
export const BuiltInSummarizerLive = Layer.succeed(Summarizer, {
  kind: "built-in",
  summarize: ({ bot, data }) => Effect.succeed(summarize(bot.schema, data))
})
