// A fake Slack Web API (the methods the tasks use) with a seeded, deterministic workspace: 48
// users, 36 channels (4 archived, 5 private), 420 messages in #general and fewer elsewhere. As
// on slack.com, the methods live under /api/ (anything else is an HTML 404 page), every answer
// is HTTP 200 with `ok` true or false and an `error` code, and lists page by `cursor`.
import { random, pick, token, serve } from './serve.mjs';

export const SLACK_TOKEN = 'xoxb-tasks-0123456789-abcdef';
const TEAM = 'T0TASKS01';

const NAMES = ['amara', 'bilal', 'chen', 'dara', 'elif', 'femi', 'gita', 'hugo', 'ines', 'jonas',
  'kiri', 'lena', 'mateo', 'nadia', 'omar', 'priya', 'quinn', 'rosa', 'sami', 'tariq', 'uma',
  'viktor', 'wen', 'ximena', 'yusuf', 'zoe', 'arjun', 'bea', 'carlos', 'dmitri', 'emma', 'farah',
  'gus', 'hana', 'ivan', 'jade', 'kofi', 'lucia', 'mika', 'noor', 'otto', 'pia', 'rafa', 'sven',
  'tess', 'ugo'];
const TITLES = ['Software Engineer', 'Senior Software Engineer', 'Staff Engineer', 'SRE',
  'Product Manager', 'Designer', 'Engineering Manager', 'Support Lead', 'Account Executive'];
const ZONES = [['America/Los_Angeles', 'Pacific Standard Time', -28800], ['America/New_York', 'Eastern Standard Time', -18000],
  ['Europe/Berlin', 'Central European Time', 3600], ['Asia/Kolkata', 'India Standard Time', 19800]];
const CHANNELS = ['general', 'random', 'eng-alerts', 'deployments', 'design', 'sales', 'support',
  'incidents', 'backend', 'frontend', 'mobile', 'data', 'security', 'hiring', 'announcements',
  'watercooler', 'book-club', 'running', 'music', 'pets', 'help-it', 'help-hr', 'product',
  'release-notes', 'customer-feedback', 'ops', 'qa', 'docs', 'legal', 'finance', 'marketing',
  'partners', 'oncall', 'perf', 'infra', 'old-website'];
const WORDS = ['deploy', 'rollback', 'review', 'lunch', 'standup', 'bug', 'release', 'latency',
  'meeting', 'docs', 'tests', 'coffee', 'migration', 'dashboard', 'customer', 'ticket'];

const T0 = Date.UTC(2025, 0, 6) / 1000;

function userObject(rand, i, name) {
  const real = `${name[0].toUpperCase()}${name.slice(1)} ${pick(rand, ['Okafor', 'Novak', 'Silva', 'Tanaka', 'Haddad', 'Larsen', 'Mendez', 'Kowalski'])}`;
  const [tz, tzLabel, tzOffset] = pick(rand, ZONES);
  const id = `U0${token(rand, 9, '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ')}`;
  const hash = token(rand, 12, '0123456789abcdef');
  const image = (size) => `https://avatars.slack-edge.com/2025-01-06/${id}_${hash}_${size}.png`;
  const bot = name === 'deploybot' || name === 'pagerbot';
  return {
    id, team_id: TEAM, name, deleted: !bot && i % 23 === 22, color: token(rand, 6, '0123456789abcdef'), real_name: bot ? name : real,
    tz, tz_label: tzLabel, tz_offset: tzOffset,
    profile: {
      title: bot ? '' : pick(rand, TITLES), phone: '', skype: '', real_name: bot ? name : real, real_name_normalized: bot ? name : real,
      display_name: name, display_name_normalized: name, fields: null, status_text: '', status_emoji: '',
      status_emoji_display_info: [], status_expiration: 0, avatar_hash: hash, email: bot ? undefined : `${name}@tasks.example`,
      first_name: real.split(' ')[0], last_name: real.split(' ')[1], image_24: image(24), image_32: image(32),
      image_48: image(48), image_72: image(72), image_192: image(192), image_512: image(512), status_text_canonical: '', team: TEAM,
    },
    is_admin: i < 3, is_owner: i === 0, is_primary_owner: i === 0, is_restricted: false, is_ultra_restricted: false,
    is_bot: bot, is_app_user: false, updated: Math.floor(T0 + rand() * 200 * 86400), is_email_confirmed: !bot,
    who_can_share_contact_card: 'EVERYONE', has_2fa: !bot && rand() < 0.7,
  };
}

function channelObject(rand, i, name, users) {
  const creator = users[i % 5].id;
  const created = Math.floor(T0 - (400 - i * 7) * 86400);
  const members = users.filter((u, k) => !u.deleted && (name === 'general' || (k + i) % 3 !== 0)).map((u) => u.id);
  return {
    id: `C0${token(rand, 9, '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ')}`, name, is_channel: true, is_group: false, is_im: false,
    is_mpim: false, is_private: i >= 31, created, is_archived: name === 'old-website' || (i >= 27 && i < 30),
    is_general: name === 'general', unlinked: 0, name_normalized: name, is_shared: false, is_org_shared: false,
    is_pending_ext_shared: false, pending_shared: [], context_team_id: TEAM, updated: (created + 86400) * 1000,
    parent_conversation: null, creator, is_ext_shared: false, shared_team_ids: [TEAM], pending_connected_team_ids: [],
    is_member: name !== 'design', topic: { value: name === 'general' ? 'Company-wide announcements and work-based matters' : '', creator: '', last_set: 0 },
    purpose: { value: `Conversations about ${name.replace('-', ' ')}.`, creator, last_set: created },
    properties: { canvas: { file_id: `F0${token(rand, 9, '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ')}`, is_empty: true, quip_thread_id: token(rand, 11) } },
    previous_names: [], num_members: members.length, members,
  };
}

function messageObject(rand, channelIndex, n, author, total) {
  const ts = `${Math.floor(T0 + channelIndex * 3600 + (n / total) * 250 * 86400 + rand() * 600)}.${String(Math.floor(rand() * 999999)).padStart(6, '0')}`;
  const words = [pick(rand, WORDS), pick(rand, WORDS), pick(rand, WORDS)];
  const text = author.is_bot
    ? `:rocket: ${author.name === 'deploybot' ? `Deployed api v2.${n} to production` : `Alert resolved: ${words[0]} on node-${n % 9}`}`
    : `Anyone around for the ${words[0]}? I think the ${words[1]} and the ${words[2]} are related (#${n}).`;
  const message = {
    user: author.id, type: 'message', ts, client_msg_id: author.is_bot ? undefined : `${token(rand, 8, '0123456789abcdef')}-${token(rand, 4, '0123456789abcdef')}-${token(rand, 4, '0123456789abcdef')}-${token(rand, 4, '0123456789abcdef')}-${token(rand, 12, '0123456789abcdef')}`,
    text, team: TEAM,
    blocks: [{ type: 'rich_text', block_id: token(rand, 5), elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text }] }] }],
  };
  if (author.is_bot) message.bot_id = `B0${author.id.slice(2)}`;
  if (rand() < 0.2) message.reactions = [{ name: pick(rand, ['+1', 'eyes', 'tada', 'white_check_mark']), users: [author.id], count: 1 }];
  return message;
}

export function slackData() {
  const rand = random(0x51ac);
  const users = NAMES.map((name, i) => userObject(rand, i, name));
  users.push(userObject(rand, 46, 'deploybot'), userObject(rand, 47, 'pagerbot'));
  const channels = CHANNELS.map((name, i) => channelObject(rand, i, name, users));
  const counts = { general: 420, 'eng-alerts': 150, deployments: 90, random: 60, incidents: 35 };
  const history = {};
  channels.forEach((channel, i) => {
    const total = counts[channel.name] ?? (i * 7) % 25;
    const people = users.filter((u) => channel.members.includes(u.id) && !u.is_bot);
    const bots = users.filter((u) => u.is_bot);
    const list = [];
    for (let n = 0; n < total; n += 1) {
      const bot = (channel.name === 'deployments' && n % 3 !== 2) || (channel.name === 'eng-alerts' && n % 2 === 0);
      // A few people talk far more than the rest.
      const author = bot ? bots[channel.name === 'deployments' ? 0 : 1] : people[Math.floor(rand() ** 2 * people.length)];
      list.push(messageObject(rand, i, n, author, total));
    }
    history[channel.id] = list.sort((a, b) => Number(b.ts) - Number(a.ts));  // newest first
  });
  return { users, channels, history, posted: 0 };
}

const cursorOf = (offset) => Buffer.from(`offset:${offset}`).toString('base64');
function offsetOf(cursor) {
  if (!cursor) return 0;
  const m = /^offset:(\d+)$/.exec(Buffer.from(cursor, 'base64').toString());
  return m ? Number(m[1]) : -1;
}

// One page of `items` by `cursor` and `limit` (default and maximum as the method says).
function page(items, query, { fallback, max }) {
  const offset = offsetOf(query.get('cursor'));
  if (offset < 0) return { error: 'invalid_cursor' };
  const limitText = query.get('limit');
  const limit = Math.min(max, limitText ? Number(limitText) || fallback : fallback);
  const slice = items.slice(offset, offset + limit);
  const next = offset + limit < items.length ? cursorOf(offset + limit) : '';
  return { slice, next };
}

const omitMembers = ({ members, ...channel }) => channel;

function findChannel(data, id) {
  return data.channels.find((c) => c.id === id);
}

function handle(data, { method, path, query, body }) {
  if (!path.startsWith('/api/')) {
    return { status: 404, body: '<!DOCTYPE html><html><head><title>Slack: page not found</title></head><body><h1>There’s been a glitch…</h1><p>We’re not quite sure what went wrong.</p></body></html>' };
  }
  // Slack methods take their arguments from the query or a form or JSON body alike.
  const args = new URLSearchParams(query);
  for (const [k, v] of Object.entries(body)) args.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const ok = (fields) => ({ status: 200, body: { ok: true, ...fields } });
  const fail = (error, extra = {}) => ({ status: 200, body: { ok: false, error, ...extra } });
  const name = path.slice('/api/'.length);
  switch (name) {
    case 'auth.test':
      return ok({ url: 'https://tasks-example.slack.com/', team: 'Tasks Example', user: 'deploybot', team_id: TEAM,
        user_id: data.users.at(-2).id, bot_id: 'B0TASKSBOT', is_enterprise_install: false });
    case 'conversations.list': {
      const types = (args.get('types') ?? 'public_channel').split(',');
      let list = data.channels.filter((c) => (c.is_private ? types.includes('private_channel') : types.includes('public_channel')));
      if (args.get('exclude_archived') === 'true' || args.get('exclude_archived') === '1') list = list.filter((c) => !c.is_archived);
      const p = page(list, args, { fallback: 100, max: 1000 });
      if (p.error) return fail(p.error);
      return ok({ channels: p.slice.map(omitMembers), response_metadata: { next_cursor: p.next } });
    }
    case 'conversations.info': {
      const channel = findChannel(data, args.get('channel'));
      return channel ? ok({ channel: omitMembers(channel) }) : fail('channel_not_found');
    }
    case 'conversations.members': {
      const channel = findChannel(data, args.get('channel'));
      if (!channel) return fail('channel_not_found');
      const p = page(channel.members, args, { fallback: 100, max: 1000 });
      if (p.error) return fail(p.error);
      return ok({ members: p.slice, response_metadata: { next_cursor: p.next } });
    }
    case 'conversations.history': {
      if (!args.get('channel')) return fail('invalid_arguments', { response_metadata: { messages: ['[ERROR] missing required field: channel'] } });
      const channel = findChannel(data, args.get('channel'));
      if (!channel) return fail('channel_not_found');
      let list = data.history[channel.id];
      const oldest = Number(args.get('oldest') ?? 0);
      const latest = Number(args.get('latest') ?? Infinity);
      list = list.filter((m) => Number(m.ts) > oldest && Number(m.ts) < latest);
      const p = page(list, args, { fallback: 100, max: 999 });
      if (p.error) return fail(p.error);
      return ok({ messages: p.slice, has_more: p.next !== '', pin_count: 0, channel_actions_ts: null,
        channel_actions_count: 0, response_metadata: { next_cursor: p.next } });
    }
    case 'users.list': {
      const p = page(data.users, args, { fallback: 1000, max: 1000 });
      if (p.error) return fail(p.error);
      return ok({ members: p.slice, cache_ts: Math.floor(T0 + 300 * 86400), response_metadata: { next_cursor: p.next } });
    }
    case 'users.info': {
      const user = data.users.find((u) => u.id === args.get('user'));
      return user ? ok({ user }) : fail('user_not_found');
    }
    case 'chat.postMessage': {
      if (method !== 'POST') return fail('invalid_request', { warning: 'method must be POST' });
      const target = args.get('channel') ?? '';
      const channel = data.channels.find((c) => c.id === target || `#${c.name}` === target || c.name === target);
      if (!target || !channel) return fail('channel_not_found');
      if (channel.is_archived) return fail('is_archived');
      if (!channel.is_member) return fail('not_in_channel');
      if (!args.get('text') && !args.get('blocks')) return fail('no_text');
      data.posted += 1;
      const bot = data.users.at(-2);
      const message = { user: bot.id, type: 'message', ts: `${Math.floor(T0 + 300 * 86400) + data.posted}.000100`,
        bot_id: 'B0TASKSBOT', app_id: 'A0TASKSAPP', text: args.get('text'), team: TEAM,
        bot_profile: { id: 'B0TASKSBOT', deleted: false, name: 'deploybot', updated: T0, app_id: 'A0TASKSAPP', team_id: TEAM,
          icons: { image_36: 'https://a.slack-edge.com/80588/img/plugins/app/bot_36.png' } },
        blocks: [{ type: 'rich_text', block_id: 'tasks', elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: args.get('text') }] }] }] };
      data.history[channel.id].unshift(message);
      return ok({ channel: channel.id, ts: message.ts, message });
    }
    default:
      return { status: 404, body: { ok: false, error: 'unknown_method', req_method: name } };
  }
}

// Starts a fake Slack on 127.0.0.1 (port 0) over a fresh copy of the seeded workspace.
export async function startSlack() {
  const data = slackData();
  const server = await serve({
    token: SLACK_TOKEN,
    handle: (request) => handle(data, request),
    unauthorized: () => ({ status: 200, body: { ok: false, error: 'not_authed' } }),
  });
  return { ...server, data };
}
