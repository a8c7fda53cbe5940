/**
 * The delivery benches' own records (bench/delivery.ts, bench/drain-dispatcher.ts): the test
 * fixtures import vitest, which only runs under vitest.
 */
import { randomUUID } from "node:crypto"
import type { DomainEvent, IntakeBot, Submission, Workspace } from "@intake/domain"
import { makeIntakeBotId, makeSubmissionId, makeWorkspaceId } from "@intake/domain"

export const id = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`
export const workspaceRecord = (name = "Bench"): Workspace => ({
  id: makeWorkspaceId(id("ws")),
  name,
  plan: "business",
  status: "active",
  monthlySubmissionQuota: 1_000_000,
  rateLimitPerMinute: null,
  createdAt: 0,
  updatedAt: 0
})
export const botRecord = (workspaceId: string): IntakeBot => ({
  id: makeIntakeBotId(id("bot")),
  workspaceId: makeWorkspaceId(workspaceId),
  name: "Bench form",
  description: "",
  status: "ACTIVE",
  shareSlug: randomUUID().slice(0, 8),
  schema: [{ name: "email", label: "Email", type: "email", required: true }],
  schemaVersion: 1,
  createdAt: 0,
  updatedAt: 0
})
export const submissionRecord = (bot: IntakeBot, at: number): Submission => ({
  id: makeSubmissionId(id("sub")),
  workspaceId: bot.workspaceId,
  intakeBotId: bot.id,
  data: { email: "ada@example.com" },
  status: "COMPLETED",
  aiSummary: "Email: ada@example.com",
  isTest: false,
  fileCount: 0,
  schemaVersion: bot.schemaVersion,
  createdAt: at,
  updatedAt: at
})
export const eventRecord = (submission: Submission): DomainEvent => ({
  id: id("evt"),
  workspaceId: submission.workspaceId,
  type: "submission.completed",
  intakeBotId: submission.intakeBotId,
  submissionId: submission.id,
  contactId: null,
  createdAt: submission.createdAt
})
