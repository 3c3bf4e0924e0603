// A fake Stripe API (the parts the tasks use) with seeded, deterministic data: 28 customers,
// 260 charges (newest first, as Stripe lists them), refunds, the balance. Objects carry every
// field the real API returns (most of them null), because what a one-tool-per-operation server
// hands the model is the whole object; the errors have Stripe's shape and wording.
import { random, pick, token, serve } from './serve.mjs';

export const STRIPE_KEY = 'sk_test_tasks_0123456789abcdef';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Radia',
  'Ken', 'Margaret', 'Leslie', 'Sophie', 'Tim', 'Hedy', 'Linus', 'Katherine', 'Guido', 'Annie',
  'Dennis', 'Shafi', 'Niklaus', 'Jean', 'Bjarne', 'Mary', 'Robin', 'Lynn', 'Whitfield'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'McCarthy',
  'Perlman', 'Thompson', 'Hamilton', 'Lamport', 'Wilson', 'Berners-Lee', 'Lamarr', 'Torvalds',
  'Johnson', 'van Rossum', 'Easley', 'Ritchie', 'Goldwasser', 'Wirth', 'Sammet', 'Stroustrup',
  'Keller', 'Milner', 'Conway', 'Diffie'];
const CITIES = [['San Francisco', 'CA', '94107'], ['Austin', 'TX', '78701'], ['Seattle', 'WA', '98101'],
  ['Brooklyn', 'NY', '11201'], ['Chicago', 'IL', '60601'], ['Denver', 'CO', '80202']];
const DECLINES = [['card_declined', 'Your card was declined.', 'generic_decline'],
  ['insufficient_funds', 'Your card has insufficient funds.', 'insufficient_funds'],
  ['expired_card', 'Your card has expired.', 'expired_card']];
const BRANDS = [['visa', '4242'], ['mastercard', '4444'], ['amex', '8431'], ['visa', '1881']];

const T0 = Date.UTC(2024, 0, 1) / 1000;
const T_CHARGES = Date.UTC(2025, 0, 1) / 1000;

function address(city) {
  return { city: city[0], country: 'US', line1: `${100 + city[2].length * 7} Market Street`, line2: null,
    postal_code: city[2], state: city[1] };
}

function customerObject(rand, i) {
  const name = `${FIRST[i]} ${LAST[i]}`;
  const email = `${FIRST[i].toLowerCase()}.${LAST[i].toLowerCase().replace(/[^a-z]/g, '')}@example.com`;
  const city = pick(rand, CITIES);
  return {
    id: `cus_${token(rand, 14)}`, object: 'customer', address: address(city), balance: 0,
    created: Math.floor(T0 + (i / 28) * 640 * 86400 + rand() * 86400), currency: 'usd',
    default_source: null, delinquent: false, description: null, discount: null, email,
    invoice_prefix: token(rand, 8, '0123456789ABCDEF'),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false, metadata: {}, name, next_invoice_sequence: 1,
    phone: `+1${Math.floor(2000000000 + rand() * 7999999999)}`, preferred_locales: [], shipping: null,
    tax_exempt: 'none', test_clock: null,
  };
}

function chargeObject(rand, i, customer) {
  const roll = rand();
  const status = roll < 0.86 ? 'succeeded' : roll < 0.96 ? 'failed' : 'pending';
  const currency = rand() < 0.1 ? 'eur' : 'usd';
  const amount = Math.round(500 + rand() * 49500);
  const decline = status === 'failed' ? pick(rand, DECLINES) : null;
  const [brand, last4] = pick(rand, BRANDS);
  const id = `ch_3${token(rand, 23)}`;
  const pi = `pi_3${id.slice(4)}`;
  const created = Math.floor(T_CHARGES + (i / 260) * 270 * 86400 + rand() * 3600);
  const city = customer ? [customer.address.city, customer.address.state, customer.address.postal_code] : pick(rand, CITIES);
  return {
    id, object: 'charge', amount, amount_captured: status === 'succeeded' ? amount : 0, amount_refunded: 0,
    application: null, application_fee: null, application_fee_amount: null,
    balance_transaction: status === 'succeeded' ? `txn_3${id.slice(4)}` : null,
    billing_details: { address: address(city), email: customer?.email ?? null,
      name: customer?.name ?? null, phone: null, tax_id: null },
    calculated_statement_descriptor: 'TASKS.EXAMPLE', captured: status === 'succeeded', created, currency,
    customer: customer?.id ?? null, description: `Order ${1000 + i}`, disputed: false,
    failure_balance_transaction: null, failure_code: decline?.[0] ?? null, failure_message: decline?.[1] ?? null,
    fraud_details: {}, invoice: null, livemode: false, metadata: { order_id: String(1000 + i) }, on_behalf_of: null,
    outcome: {
      advice_code: null, network_advice_code: null, network_decline_code: null,
      network_status: decline ? 'declined_by_network' : 'approved_by_network',
      reason: decline?.[2] ?? null, risk_level: 'normal', risk_score: Math.floor(rand() * 60),
      seller_message: decline ? 'The bank did not return any further details with this decline.' : 'Payment complete.',
      type: decline ? 'issuer_declined' : 'authorized',
    },
    paid: status === 'succeeded', payment_intent: pi, payment_method: `pm_1${token(rand, 23)}`,
    payment_method_details: {
      card: {
        amount_authorized: status === 'succeeded' ? amount : null, authorization_code: status === 'succeeded' ? String(100000 + Math.floor(rand() * 899999)) : null,
        brand, checks: { address_line1_check: 'pass', address_postal_code_check: 'pass', cvc_check: 'pass' },
        country: 'US', exp_month: 1 + Math.floor(rand() * 12), exp_year: 2026 + Math.floor(rand() * 5),
        extended_authorization: { status: 'disabled' }, fingerprint: token(rand, 16), funding: 'credit',
        incremental_authorization: { status: 'unavailable' }, installments: null, last4, mandate: null,
        multicapture: { status: 'unavailable' }, network: brand, network_token: { used: false },
        network_transaction_id: String(Math.floor(rand() * 1e15)), overcapture: { maximum_amount_capturable: amount, status: 'unavailable' },
        regulated_status: 'unregulated', three_d_secure: null, wallet: null,
      },
      type: 'card',
    },
    radar_options: {}, receipt_email: customer?.email ?? null, receipt_number: null,
    receipt_url: `https://pay.stripe.com/receipts/payment/${token(rand, 40)}`, refunded: false,
    refunds: { object: 'list', data: [], has_more: false, total_count: 0, url: `/v1/charges/${id}/refunds` },
    review: null, shipping: null, source: null, source_transfer: null, statement_descriptor: null,
    statement_descriptor_suffix: null, status, transfer_data: null, transfer_group: null,
  };
}

// The seeded account; every server starts from a fresh copy (writes change only that copy).
export function stripeData() {
  const rand = random(0x5717e);
  const customers = FIRST.map((_, i) => customerObject(rand, i));
  const charges = [];
  for (let i = 0; i < 260; i += 1) {
    // Some customers buy far more often than others; every 13th charge is a guest checkout.
    const c = i % 13 === 12 ? null : customers[Math.floor(rand() ** 1.7 * customers.length)];
    charges.push(chargeObject(rand, i, c));
  }
  // Stripe lists newest first.
  customers.sort((a, b) => b.created - a.created);
  charges.sort((a, b) => b.created - a.created);
  return { customers, charges, refunds: [], nextRefund: 1 };
}

// Stripe's error object, its keys in Stripe's (alphabetical) order.
function stripeError(status, fields) {
  const error = { request_log_url: 'https://dashboard.stripe.com/test/logs/req_tasks', type: 'invalid_request_error', ...fields };
  return { status, body: { error: Object.fromEntries(Object.entries(error).sort(([a], [b]) => a.localeCompare(b))) } };
}

function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j += 1) d[0][j] = j;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

// Stripe refuses parameters an endpoint does not take, suggesting a close one.
function unknownParameter(names, known) {
  for (const name of names) {
    const base = name.replace(/\[.*$/, '');
    if (known.includes(base)) continue;
    const near = known.map((k) => [distance(base, k), k]).sort((x, y) => x[0] - y[0])[0];
    const hint = near && (near[0] <= 3 || base.includes(near[1]) || near[1].includes(base)) ? ` Did you mean ${near[1]}?` : '';
    return stripeError(400, { code: 'parameter_unknown', doc_url: 'https://stripe.com/docs/error-codes/parameter-unknown',
      message: `Received unknown parameter: ${base}.${hint}`.replace('..', '.'), param: base });
  }
  return null;
}

function integer(name, value) {
  if (!/^-?\d+$/.test(String(value))) {
    return stripeError(400, { code: 'parameter_invalid_integer', doc_url: 'https://stripe.com/docs/error-codes/parameter-invalid-integer',
      message: `Invalid integer: ${value}`, param: name });
  }
  return null;
}

const CREATED = /^created\[(gt|gte|lt|lte)\]$/;

// A list page as Stripe answers it: `limit` 1-100 (default 10), `starting_after`/`ending_before`
// by id, `created` exact or with [gt|gte|lt|lte].
function listPage(kind, items, query, url) {
  const limitText = query.get('limit') ?? '10';
  const bad = integer('limit', limitText);
  if (bad) return bad;
  const limit = Number(limitText);
  if (limit < 1 || limit > 100) {
    return stripeError(400, { code: 'parameter_invalid_integer', message: 'This value must be greater than or equal to 1 and less than or equal to 100.', param: 'limit' });
  }
  let list = items;
  for (const [key, value] of query) {
    const m = CREATED.exec(key);
    if (key === 'created' || m) {
      const bad = integer(key, value);
      if (bad) return bad;
    }
    if (key === 'created') list = list.filter((x) => x.created === Number(value));
    if (!m) continue;
    const t = Number(value);
    list = list.filter((x) => ({ gt: x.created > t, gte: x.created >= t, lt: x.created < t, lte: x.created <= t })[m[1]]);
  }
  const after = query.get('starting_after');
  const before = query.get('ending_before');
  let start = 0;
  let end = list.length;
  for (const [id, which] of [[after, 'after'], [before, 'before']]) {
    if (!id) continue;
    const at = items.findIndex((x) => x.id === id);
    if (at < 0) return stripeError(400, { code: 'resource_missing', message: `No such ${kind}: '${id}'`, param: which === 'after' ? 'starting_after' : 'ending_before' });
    const pos = list.findIndex((x) => x.id === id);
    if (which === 'after') start = pos + 1; else end = pos;
  }
  const page = before && !after ? list.slice(Math.max(0, end - limit), end) : list.slice(start, start + limit);
  const more = before && !after ? end - limit > 0 : start + limit < list.length;
  return { status: 200, body: { object: 'list', data: page, has_more: more, url } };
}

const LIST_PARAMS = ['created', 'ending_before', 'expand', 'limit', 'starting_after'];

function handle(data, { method, path, query, body }) {
  const params = method === 'GET' ? [...query.keys()] : Object.keys(body);
  const notFound = stripeError(404, { message: `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.` });
  let m;
  if (path === '/v1/balance' && method === 'GET') {
    const bad = unknownParameter(params, ['expand']);
    if (bad) return bad;
    const sum = (currency, pending) => data.charges.filter((c) => c.currency === currency
      && c.status === (pending ? 'pending' : 'succeeded')).reduce((s, c) => s + c.amount - c.amount_refunded, 0);
    const amount = (currency, pending) => ({ amount: sum(currency, pending), currency, source_types: { card: sum(currency, pending) } });
    return { status: 200, body: { object: 'balance', available: [amount('usd', false), amount('eur', false)],
      connect_reserved: [{ amount: 0, currency: 'usd' }], livemode: false, pending: [amount('usd', true), amount('eur', true)],
      refund_and_dispute_prefunding: { available: [{ amount: 0, currency: 'usd' }], pending: [{ amount: 0, currency: 'usd' }] } } };
  }
  if (path === '/v1/customers' && method === 'GET') {
    const bad = unknownParameter(params, [...LIST_PARAMS, 'email', 'test_clock']);
    if (bad) return bad;
    const email = query.get('email');
    const list = email ? data.customers.filter((c) => c.email.toLowerCase() === email.toLowerCase()) : data.customers;
    return listPage('customer', list, query, '/v1/customers');
  }
  if (path === '/v1/customers' && method === 'POST') {
    const bad = unknownParameter(params.map((p) => p.replace(/\[.*$/, '')), ['address', 'balance', 'description', 'email', 'expand', 'metadata', 'name', 'phone', 'shipping', 'tax_exempt']);
    if (bad) return bad;
    const rand = random(data.customers.length * 7919);
    const customer = { ...customerObject(rand, 0), name: body.name ?? null, email: body.email ?? null,
      description: body.description ?? null, phone: body.phone ?? null, address: null, created: Math.floor(Date.UTC(2025, 9, 1) / 1000) };
    data.customers.unshift(customer);
    return { status: 200, body: customer };
  }
  if ((m = /^\/v1\/customers\/([^/]+)$/.exec(path)) && method === 'GET') {
    const c = data.customers.find((x) => x.id === m[1]);
    return c ? { status: 200, body: c } : stripeError(404, { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message: `No such customer: '${m[1]}'`, param: 'id' });
  }
  if (path === '/v1/charges' && method === 'GET') {
    const bad = unknownParameter(params, [...LIST_PARAMS, 'customer', 'payment_intent', 'transfer_group']);
    if (bad) return bad;
    const customer = query.get('customer');
    const list = customer ? data.charges.filter((c) => c.customer === customer) : data.charges;
    return listPage('charge', list, query, '/v1/charges');
  }
  if ((m = /^\/v1\/charges\/([^/]+)$/.exec(path)) && method === 'GET') {
    const c = data.charges.find((x) => x.id === m[1]);
    return c ? { status: 200, body: c } : stripeError(404, { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message: `No such charge: '${m[1]}'`, param: 'id' });
  }
  if (path === '/v1/refunds' && method === 'GET') {
    const bad = unknownParameter(params, [...LIST_PARAMS, 'charge', 'payment_intent']);
    if (bad) return bad;
    const charge = query.get('charge');
    return listPage('refund', charge ? data.refunds.filter((r) => r.charge === charge) : data.refunds, query, '/v1/refunds');
  }
  if (path === '/v1/refunds' && method === 'POST') {
    const bad = unknownParameter(params.map((p) => p.replace(/\[.*$/, '')), ['amount', 'charge', 'currency', 'customer', 'expand', 'instructions_email', 'metadata', 'origin', 'payment_intent', 'reason', 'refund_application_fee', 'reverse_transfer']);
    if (bad) return bad;
    if (!body.charge && !body.payment_intent) return stripeError(400, { message: 'One of `charge` or `payment_intent` is required.' });
    const charge = data.charges.find((c) => c.id === body.charge || c.payment_intent === body.payment_intent);
    if (!charge) return stripeError(400, { code: 'resource_missing', message: `No such charge: '${body.charge ?? body.payment_intent}'`, param: body.charge ? 'charge' : 'payment_intent' });
    if (body.amount !== undefined) {
      const badAmount = integer('amount', body.amount);
      if (badAmount) return badAmount;
    }
    if (body.reason !== undefined && !['duplicate', 'fraudulent', 'requested_by_customer'].includes(body.reason)) {
      return stripeError(400, { code: 'parameter_invalid_string', message: `Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer`, param: 'reason' });
    }
    if (charge.status !== 'succeeded') return stripeError(400, { code: 'charge_not_refundable', message: `Charge ${charge.id} has not been captured, so it cannot be refunded.` });
    const left = charge.amount - charge.amount_refunded;
    if (left === 0) return stripeError(400, { code: 'charge_already_refunded', doc_url: 'https://stripe.com/docs/error-codes/charge-already-refunded', message: `Charge ${charge.id} has already been refunded.` });
    const amount = body.amount === undefined ? left : Number(body.amount);
    if (amount > left) {
      const money = (n) => `$${(n / 100).toFixed(2)}`;
      return stripeError(400, { code: 'amount_too_large', message: `Refund amount (${money(amount)}) is greater than unrefunded amount on charge (${money(left)})`, param: 'amount' });
    }
    const refund = { id: `re_3${charge.id.slice(4, 18)}${String(data.nextRefund).padStart(9, '0')}`, object: 'refund', amount,
      balance_transaction: `txn_3${token(random(data.nextRefund), 23)}`, charge: charge.id, created: Math.floor(Date.UTC(2025, 9, 1) / 1000) + data.nextRefund,
      currency: charge.currency, destination_details: { card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' }, type: 'card' },
      metadata: {}, payment_intent: charge.payment_intent, reason: body.reason ?? null, receipt_number: null,
      source_transfer_reversal: null, status: 'succeeded', transfer_reversal: null };
    data.nextRefund += 1;
    data.refunds.unshift(refund);
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded === charge.amount;
    charge.refunds.data.unshift(refund);
    charge.refunds.total_count += 1;
    return { status: 200, body: refund };
  }
  return notFound;
}

// Starts a fake Stripe on 127.0.0.1 (port 0) over a fresh copy of the seeded account.
export async function startStripe() {
  const data = stripeData();
  const server = await serve({
    token: STRIPE_KEY,
    handle: (request) => handle(data, request),
    unauthorized: () => ({ status: 401, body: { error: { message: 'Invalid API Key provided: sk_test_***', type: 'invalid_request_error' } } }),
  });
  return { ...server, data };
}
