/**
 * The demo data `pnpm start` creates in an empty embedded store: a Pro workspace, a key
 * with every scope and a "Contact form" bot, so the first curl answers 200.
 */
import { allScopes, IntakeBots, Provisioning } from "@intake/domain"
import { Effect } from "effect"

export interface Demo {
  readonly workspaceId: string
  readonly intakeBotId: string
  /** The full key: printed once, never logged. */
  readonly key: string
}

export const seedDemo = Effect.gen(function* () {
  const provisioning = yield* Provisioning
  const bots = yield* IntakeBots
  const workspace = yield* provisioning.createWorkspace({ name: "Demo workspace", plan: "pro" })
  const issued = yield* provisioning.createApiKey(workspace.id, { scopes: allScopes, name: "Demo key" })
  const bot = yield* bots.create(workspace.id, {
    name: "Contact form",
    description: "Collects a name, an email address, a topic and a message.",
    schema: [
      { name: "name", label: "Name", type: "text", required: true },
      { name: "email", label: "Email", type: "email", required: true },
      { name: "topic", label: "Topic", type: "select", options: ["sales", "support", "other"] },
      { name: "message", label: "Message", type: "long_text" }
    ]
  })
  return { workspaceId: workspace.id, intakeBotId: bot.id, key: issued.key } satisfies Demo
})

/**
 * The one-time print of the demo key: `export` lines to paste into a shell, which the
 * README's "Try it" commands use ($INTAKE_KEY, $INTAKE_BOT), and a first request.
 */
export const demoBanner = (demo: Demo, baseUrl: string, store = "embedded in-memory store"): string =>
  [
    "",
    `Demo workspace created in the ${store}.`,
    `API key (shown once): ${demo.key}`,
    `Paste into your shell for the README's "Try it":`,
    `  export INTAKE_KEY=${demo.key}`,
    `  export INTAKE_BOT=${demo.intakeBotId}`,
    `  curl -H "Authorization: Bearer $INTAKE_KEY" ${baseUrl}/v1/intake-bots`,
    ""
  ].join("\n")
