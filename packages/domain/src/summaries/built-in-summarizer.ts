import { Effect, Layer } from "effect"
import { summarize } from "./summary.js"
import { Summarizer } from "../shared/ports.js"

/** The deterministic summarizer of docs/rules.md, Resources and states: labels and values, at most 280 characters. */
export const BuiltInSummarizerLive = Layer.succeed(Summarizer, {
  kind: "built-in",
  summarize: ({ bot, data }) => Effect.succeed(summarize(bot.schema, data))
})
