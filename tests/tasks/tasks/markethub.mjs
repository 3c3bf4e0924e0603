// Tasks over MarketHub, the embedded demo (fixtures/markethub: seed.json holds the data every
// answer below follows from). Reads first; the writes come last, in this order, since they
// change the store (the order of tasks is part of the data).

// The search a model writes first on an API it does not know yet, after the first example in
// the `search` description: the operations whose path or summary match, with their parameters.
export const findOperations = (pattern) => `async () => Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item).filter(([m]) => m !== 'parameters').map(([m, op]) =>
    ({ op: m.toUpperCase() + ' ' + path, summary: op.summary, params: (op.parameters ?? []).map((p) => p.name) })))
  .filter((o) => /${pattern}/i.test(o.op + ' ' + o.summary))`;

const dollars = (cents) => cents / 100;

export default [
  {
    id: 'markethub/product-lookup',
    kind: 'lookup',
    words: 'What is product prod_0007 called, and what does it cost?',
    // The execute description's own example fetches `/products/${id}`: no search needed.
    steps: [
      { tool: 'execute', code: `async () => {
  const p = await (await fetch('/products/prod_0007')).json();
  return { name: p.name, price: p.price };
}` },
    ],
    // fetch() where only `spec` exists: the error must say to use `execute`.
    mistake: {
      step: 0,
      tool: 'search',
      code: `async () => {
  const p = await (await fetch('/products/prod_0007')).json();
  return { name: p.name, price: p.price };
}`,
      error: /execute/,
      needs: ['#37 errors'],  // today: "runtime: ReferenceError: fetch is not defined"
    },
    answer: { name: 'TrailCam 4K Action Camera', price: { amount: 19999, currency: 'USD' } },
    classic: async ({ call }) => {
      const p = await call('GET /products/{productId}', { productId: 'prod_0007' });
      return { name: p.name, price: p.price };
    },
  },
  {
    id: 'markethub/out-of-stock',
    kind: 'filter',
    words: 'Which products are out of stock?',
    steps: [
      { tool: 'search', code: findOperations('product'), shows: /in_stock/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/products?in_stock=false&limit=100');
  return (await res.json()).items.map((p) => p.name);
}` },
    ],
    answer: ['TrailCam 4K Action Camera', 'Linen Throw Blanket', 'Summit 2-Person Tent', 'Waterproof Rain Jacket', 'Remote Control Stunt Car'],
    classic: async ({ call }) => (await call('GET /products', { in_stock: false, limit: 100 })).items.map((p) => p.name),
  },
  {
    id: 'markethub/cheap-books',
    kind: 'filter',
    words: 'Which books cost less than $25? Names and prices in dollars.',
    steps: [
      { tool: 'search', code: findOperations('product|categor'), shows: /max_price/ },
      { tool: 'execute', code: `async () => {
  const cats = (await (await fetch('/categories')).json()).items;
  const books = cats.find((c) => c.name === 'Books');
  const res = await fetch(\`/products?category=\${books.id}&max_price=2499&limit=100\`);
  return (await res.json()).items.map((p) => ({ name: p.name, dollars: p.price.amount / 100 }));
}` },
    ],
    answer: [{ name: 'The Pragmatic Gardener', dollars: 24.99 }, { name: 'A Field Guide to Coastal Birds', dollars: 21.99 },
      { name: 'The Quiet Orchard', dollars: 16.99 }],
    classic: async ({ call }) => {
      const books = (await call('GET /categories', {})).items.find((c) => c.name === 'Books');
      const page = await call('GET /products', { category: books.id, max_price: 2499, limit: 100 });
      return page.items.map((p) => ({ name: p.name, dollars: dollars(p.price.amount) }));
    },
  },
  {
    id: 'markethub/order-customer',
    kind: 'join',
    words: 'Who placed order ord_0005, and what is their email address?',
    steps: [
      { tool: 'search', code: findOperations('order|customer'), shows: /customerId/ },
      { tool: 'execute', code: `async () => {
  const order = await (await fetch('/orders/ord_0005')).json();
  const c = await (await fetch(\`/customers/\${order.customer_id}\`)).json();
  return { name: c.name, email: c.email };
}` },
    ],
    answer: { name: "Liam O'Connor", email: 'liam.oconnor@example.com' },
    classic: async ({ call }) => {
      const order = await call('GET /orders/{orderId}', { orderId: 'ord_0005' });
      const c = await call('GET /customers/{customerId}', { customerId: order.customer_id });
      return { name: c.name, email: c.email };
    },
  },
  {
    id: 'markethub/top-customers',
    kind: 'join',
    words: 'Which three customers spent the most on delivered orders? Names and totals in dollars.',
    steps: [
      { tool: 'search', code: findOperations('order|customer'), shows: /status/ },
      { tool: 'execute', code: `async () => {
  const orders = (await (await fetch('/orders?status=delivered&limit=100')).json()).items;
  const spent = {};
  for (const o of orders) spent[o.customer_id] = (spent[o.customer_id] ?? 0) + o.total.amount;
  const top = Object.entries(spent).sort((a, b) => b[1] - a[1]).slice(0, 3);
  return Promise.all(top.map(async ([id, cents]) => {
    const c = await (await fetch(\`/customers/\${id}\`)).json();
    return { name: c.name, dollars: cents / 100 };
  }));
}` },
    ],
    answer: [{ name: "Liam O'Connor", dollars: 249.96 }, { name: 'Ava Thompson', dollars: 149.97 }, { name: 'Jamal Wright', dollars: 53.98 }],
    classic: async ({ call, parallel }) => {
      const orders = (await call('GET /orders', { status: 'delivered', limit: 100 })).items;
      const spent = {};
      for (const o of orders) spent[o.customer_id] = (spent[o.customer_id] ?? 0) + o.total.amount;
      const top = Object.entries(spent).sort((a, b) => b[1] - a[1]).slice(0, 3);
      const customers = await parallel(top.map(([id]) => ['GET /customers/{customerId}', { customerId: id }]));
      return customers.map((c, i) => ({ name: c.name, dollars: dollars(top[i][1]) }));
    },
  },
  {
    id: 'markethub/low-stock',
    kind: 'join',
    words: 'Which products have fewer than 5 units available, and in which warehouse are they?',
    steps: [
      { tool: 'search', code: findOperations('inventor|product'), shows: /below/ },
      { tool: 'execute', code: `async () => {
  const [levels, products] = await Promise.all([
    fetch('/inventory?below=5').then((r) => r.json()),
    fetch('/products?limit=100').then((r) => r.json()),
  ]);
  const name = Object.fromEntries(products.items.map((p) => [p.id, p.name]));
  return levels.items.map((l) => ({ name: name[l.product_id], available: l.available, warehouse: l.warehouse }));
}` },
    ],
    answer: [
      { name: 'Lumen 27" 4K Monitor', available: 3, warehouse: 'ATL-2' },
      { name: 'TrailCam 4K Action Camera', available: 0, warehouse: 'SEA-1' },
      { name: 'Linen Throw Blanket', available: 0, warehouse: 'RNO-1' },
      { name: 'Summit 2-Person Tent', available: 0, warehouse: 'RNO-1' },
      { name: 'Adjustable Dumbbell Pair', available: 2, warehouse: 'SEA-1' },
      { name: 'Waterproof Rain Jacket', available: 0, warehouse: 'ATL-2' },
      { name: 'Remote Control Stunt Car', available: 0, warehouse: 'SEA-1' },
    ],
    classic: async ({ parallel }) => {
      const [levels, products] = await parallel([['GET /inventory', { below: 5 }], ['GET /products', { limit: 100 }]]);
      const name = Object.fromEntries(products.items.map((p) => [p.id, p.name]));
      return levels.items.map((l) => ({ name: name[l.product_id], available: l.available, warehouse: l.warehouse }));
    },
  },
  {
    id: 'markethub/order-fields',
    kind: 'lookup',
    words: 'What do I have to send to create an order?',
    // Only the description answers this. A classic server has already put every operation's
    // input schema into the context, so it needs no call at all.
    steps: [
      { tool: 'search', code: `async () => {
  const s = spec.paths['/orders'].post.requestBody.content['application/json'].schema;
  return { required: s.required, item: s.properties.items.items.required };
}` },
    ],
    answer: { required: ['customer_id', 'items'], item: ['product_id', 'quantity'] },
    classic: async ({ schema }) => {
      const s = await schema('POST /orders');
      return { required: s.required, item: s.properties.items.items.required };
    },
  },
  {
    id: 'markethub/open-orders',
    kind: 'filter',
    words: 'How many orders have not shipped yet?',
    steps: [
      { tool: 'search', code: findOperations('order'), shows: /status/ },
      { tool: 'execute', code: `async () => {
  let n = 0;
  for (const status of ['pending', 'paid']) {
    const res = await fetch(\`/orders?status=\${status}&limit=100\`);
    if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
    n += (await res.json()).items.length;
  }
  return n;
}` },
    ],
    // The model guesses a status the API does not have; the 400 names the ones it has.
    mistake: {
      step: 1,
      code: `async () => {
  const res = await fetch('/orders?status=open&limit=100');
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).items.length;
}`,
      error: /status must be one of pending, paid, shipped, delivered, cancelled; got 'open'/,
    },
    answer: 6,
    classic: async ({ parallel }) => {
      const pages = await parallel([['GET /orders', { status: 'pending', limit: 100 }], ['GET /orders', { status: 'paid', limit: 100 }]]);
      return pages.reduce((n, p) => n + p.items.length, 0);
    },
  },
  {
    id: 'markethub/units-available',
    kind: 'filter',
    words: 'How many units are available in all warehouses together?',
    steps: [
      { tool: 'search', code: findOperations('inventor'), shows: /\/inventory/ },
      { tool: 'execute', code: `async () => {
  const levels = (await (await fetch('/inventory')).json()).items;
  return levels.reduce((sum, l) => sum + l.available, 0);
}` },
    ],
    // One request per product runs into the subrequest budget; the error says so.
    mistake: {
      step: 1,
      code: `async () => {
  const products = (await (await fetch('/products?limit=100')).json()).items;
  let sum = 0;
  for (const p of products) sum += (await (await fetch(\`/inventory/\${p.id}\`)).json()).available;
  return sum;
}`,
      error: /^policy: subrequest limit 10 reached/,
    },
    answer: 1534,
    classic: async ({ call }) => (await call('GET /inventory', {})).items.reduce((sum, l) => sum + l.available, 0),
  },
  {
    id: 'markethub/price-list',
    kind: 'pagination',
    words: 'Give me a price list: every product with its price in dollars.',
    steps: [
      { tool: 'execute', code: `async () => {
  const rows = [];
  let cursor = null;
  do {
    const page = await (await fetch('/products?limit=100' + (cursor ? '&cursor=' + cursor : ''))).json();
    rows.push(...page.items.map((p) => [p.name, p.price.amount / 100]));
    cursor = page.next_cursor;
  } while (cursor);
  return rows;
}` },
    ],
    // Returning the whole objects overflows the result budget; the cut marker says what to do.
    mistake: {
      step: 0,
      code: `async () => (await (await fetch('/products?limit=100')).json()).items`,
      error: /\[cut: [^\]]*return less, e\.g\. select fields[^\]]*\]$/,
    },
    answer: (rows) => (Array.isArray(rows) && rows.length === 40 && rows[0][0] === 'Aurora Wireless Earbuds'
      && rows[0][1] === 79.99 && rows[39][0] === 'Beginner Chess Set' && rows[39][1] === 29.99)
      || `expected 40 [name, dollars] rows from Aurora Wireless Earbuds (79.99) to Beginner Chess Set (29.99), got ${JSON.stringify(rows).slice(0, 200)}`,
    classic: async ({ call }) => (await call('GET /products', { limit: 100 })).items.map((p) => [p.name, dollars(p.price.amount)]),
  },
  {
    id: 'markethub/in-stock-by-category',
    kind: 'join',
    words: 'How many products are in stock in each category, most first?',
    needs: ['#36 Object.groupBy', '#36 toSorted'],
    steps: [
      { tool: 'search', code: findOperations('product|categor'), shows: /in_stock/ },
      { tool: 'execute', code: `async () => {
  const [cats, products] = await Promise.all([
    fetch('/categories').then((r) => r.json()),
    fetch('/products?in_stock=true&limit=100').then((r) => r.json()),
  ]);
  const byCat = Object.groupBy(products.items, (p) => p.category_id);
  return cats.items.map((c) => [c.name, byCat[c.id]?.length ?? 0]).toSorted((a, b) => b[1] - a[1]);
}` },
    ],
    answer: [['Electronics', 6], ['Home & Kitchen', 6], ['Books', 6], ['Sports & Outdoors', 6], ['Toys & Games', 6], ['Clothing', 5]],
    classic: async ({ parallel }) => {
      const [cats, products] = await parallel([['GET /categories', {}], ['GET /products', { in_stock: true, limit: 100 }]]);
      const count = {};
      for (const p of products.items) count[p.category_id] = (count[p.category_id] ?? 0) + 1;
      return cats.items.map((c) => [c.name, count[c.id] ?? 0]).sort((a, b) => b[1] - a[1]);
    },
  },
  {
    id: 'markethub/toy-average',
    kind: 'filter',
    words: 'What is the average price of a toy or game, in dollars?',
    needs: ['#37 typescript'],  // type annotations, an interface, `as` and `!`
    steps: [
      { tool: 'search', code: findOperations('product|categor'), shows: /category/ },
      { tool: 'execute', code: `async (): Promise<number> => {
  interface Product { id: string; price: { amount: number; currency: string } }
  const cats = (await (await fetch('/categories')).json()).items as { id: string; name: string }[];
  const toys = cats.find((c) => c.name === 'Toys & Games')!;
  const items: Product[] = (await (await fetch(\`/products?category=\${toys.id}&limit=100\`)).json()).items;
  return Math.round(items.reduce((s, p) => s + p.price.amount, 0) / items.length) / 100;
}` },
    ],
    answer: 41.13,
    classic: async ({ call }) => {
      const toys = (await call('GET /categories', {})).items.find((c) => c.name === 'Toys & Games');
      const items = (await call('GET /products', { category: toys.id, limit: 100 })).items;
      return Math.round(items.reduce((s, p) => s + p.price.amount, 0) / items.length) / 100;
    },
  },
  {
    id: 'markethub/west-coast-customers',
    kind: 'filter',
    words: 'Which customers live on the West Coast (WA, OR or CA)?',
    needs: ['#37 statements'],  // a body of statements with top-level await and return
    steps: [
      { tool: 'search', code: findOperations('customer'), shows: /\/customers/ },
      { tool: 'execute', code: `const res = await fetch('/customers?limit=100');
const { items } = await res.json();
return items.filter((c) => ['WA', 'OR', 'CA'].includes(c.address.region)).map((c) => c.name);` },
    ],
    answer: ['Ava Thompson', 'Sofia Rossi', 'Noah Kim'],
    classic: async ({ call }) => (await call('GET /customers', { limit: 100 })).items
      .filter((c) => ['WA', 'OR', 'CA'].includes(c.address.region)).map((c) => c.name),
  },
  {
    id: 'markethub/fenced-code',
    kind: 'lookup',
    words: 'Which categories are there?',
    needs: ['#37 fences'],  // the code arrives in a markdown fence, as chat models often send it
    steps: [
      { tool: 'execute', code: "```js\nasync () => (await (await fetch('/categories')).json()).items.map((c) => c.name)\n```" },
    ],
    answer: ['Electronics', 'Home & Kitchen', 'Books', 'Sports & Outdoors', 'Clothing', 'Toys & Games'],
    classic: async ({ call }) => (await call('GET /categories', {})).items.map((c) => c.name),
  },
  // Writes: each waits for the user's yes (policy.approve in the config); they change the store.
  {
    id: 'markethub/place-order',
    kind: 'write',
    words: 'Order two VoltCharge chargers (prod_0003) for customer cust_004. What does the order come to?',
    approvals: 1,
    steps: [
      { tool: 'execute', code: `async () => {
  const res = await fetch('/orders', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ customer_id: 'cust_004', items: [{ product_id: 'prod_0003', quantity: 2 }] }) });
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  const order = await res.json();
  return { status: order.status, total: order.total };
}` },
    ],
    // Field names guessed from habit; the 422 lists each wrong and each missing field.
    mistake: {
      step: 0,
      code: `async () => {
  const res = await fetch('/orders', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ customer: 'cust_004', items: [{ product: 'prod_0003', qty: 2 }] }) });
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).total;
}`,
      approvals: 1,  // the user is asked about the mistaken request too; the API then refuses it
      error: /422 .*"field":"customer_id","message":"is required".*"field":"items\[0\]\.product_id","message":"is required".*"field":"items\[0\]\.quantity","message":"is required"/,
    },
    answer: { status: 'pending', total: { amount: 6998, currency: 'USD' } },
    classic: async ({ call }) => {
      const order = await call('POST /orders', { customer_id: 'cust_004', items: [{ product_id: 'prod_0003', quantity: 2 }] });
      return { status: order.status, total: order.total };
    },
  },
  {
    id: 'markethub/cancel-shipped',
    kind: 'api-error',
    words: 'Cancel order ord_0007.',
    approvals: 1,
    steps: [
      { tool: 'execute', code: `async () => {
  const res = await fetch('/orders/ord_0007/cancel', { method: 'POST' });
  const body = await res.json();
  return res.ok ? { cancelled: body.id } : { status: res.status, error: body.error.code, message: body.error.message };
}` },
    ],
    answer: (r) => (r?.status === 409 && r.error === 'conflict' && /shipped/.test(r.message)) || `expected a 409 conflict about a shipped order, got ${JSON.stringify(r)}`,
    classic: async ({ call }) => {
      const r = await call('POST /orders/{orderId}/cancel', { orderId: 'ord_0007' });
      return r.error ? { status: r.error.status, error: r.error.body?.error?.code, message: r.error.body?.error?.message } : { cancelled: r.id };
    },
  },
  {
    id: 'markethub/cancel-pending',
    kind: 'write',
    words: 'Cancel every pending order of Priya Raman.',
    approvals: 1,
    steps: [
      { tool: 'search', code: findOperations('order|customer'), shows: /cancel/ },
      { tool: 'execute', code: `async () => {
  const customers = (await (await fetch('/customers?limit=100')).json()).items;
  const priya = customers.find((c) => c.name === 'Priya Raman');
  const pending = (await (await fetch(\`/orders?customer_id=\${priya.id}&status=pending&limit=100\`)).json()).items;
  const done = [];
  for (const o of pending) {
    const res = await fetch(\`/orders/\${o.id}/cancel\`, { method: 'POST' });
    done.push({ id: o.id, status: (await res.json()).status });
  }
  return done;
}` },
    ],
    answer: [{ id: 'ord_0013', status: 'cancelled' }],
    classic: async ({ call, parallel }) => {
      const priya = (await call('GET /customers', { limit: 100 })).items.find((c) => c.name === 'Priya Raman');
      const pending = (await call('GET /orders', { customer_id: priya.id, status: 'pending', limit: 100 })).items;
      const done = await parallel(pending.map((o) => ['POST /orders/{orderId}/cancel', { orderId: o.id }]));
      return done.map((o) => ({ id: o.id, status: o.status }));
    },
  },
];
