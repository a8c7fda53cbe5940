/** The v1 operations the client calls, as the contract names them (test/contract.test.ts checks them). */
/** Each v1 operation: its method and path (checked against the contract in a test). */
export const operations = {
  listIntakeBots: { method: "GET", path: "/v1/intake-bots" },
  getIntakeBot: { method: "GET", path: "/v1/intake-bots/:id" },
  listSubmissions: { method: "GET", path: "/v1/intake-bots/:id/submissions" },
  getSubmission: { method: "GET", path: "/v1/intake-bots/:id/submissions/:submissionId" },
  createSubmission: { method: "POST", path: "/v1/intake-bots/:id/submissions" },
  listWebhooks: { method: "GET", path: "/v1/webhooks" },
  getWebhook: { method: "GET", path: "/v1/webhooks/:id" },
  createWebhook: { method: "POST", path: "/v1/webhooks" },
  updateWebhook: { method: "PATCH", path: "/v1/webhooks/:id" },
  deleteWebhook: { method: "DELETE", path: "/v1/webhooks/:id" },
  rotateWebhookSecret: { method: "POST", path: "/v1/webhooks/:id/secret/rotate" },
  testWebhook: { method: "POST", path: "/v1/webhooks/:id/test" },
  listDeliveries: { method: "GET", path: "/v1/webhooks/:id/deliveries" },
  getDelivery: { method: "GET", path: "/v1/webhooks/:id/deliveries/:deliveryId" },
  redeliver: { method: "POST", path: "/v1/webhooks/:id/deliveries/:deliveryId/redeliver" },
  recoverWebhook: { method: "POST", path: "/v1/webhooks/:id/recover" }
} as const

export type OperationName = keyof typeof operations
