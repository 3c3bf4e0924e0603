// A fake GitHub REST API (the endpoints the tasks use) with one seeded repository,
// octo-org/widgets: 230 issues of which 38 are pull requests (GitHub's issues endpoint lists
// both), 15 people. Pages by `per_page` (default 30, at most 100) and `page`, with a `Link`
// header; objects carry the fields (and URLs) the real API returns. As on api.github.com, the
// public repository is served without a token too, never with a wrong one.
import { random, pick, serve } from './serve.mjs';

// GitHub's timestamps: seconds, no fraction.
const iso = (date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

export const GITHUB_TOKEN = 'ghp_tasks0123456789abcdefghijklmnopqrstu';
const API = 'https://api.github.com';
const OWNER = 'octo-org';
const REPO = 'widgets';

const LOGINS = ['octocat', 'hubot', 'monalisa', 'defunkt', 'mojombo', 'pjhyett', 'wycats', 'ezmobius',
  'ivey', 'evanphx', 'vanpelt', 'wayneeseguin', 'brynary', 'kevinclark', 'technoweenie'];
const LABELS = [['bug', 'd73a4a', "Something isn't working"], ['enhancement', 'a2eeef', 'New feature or request'],
  ['documentation', '0075ca', 'Improvements or additions to documentation'], ['good first issue', '7057ff', 'Good for newcomers'],
  ['question', 'd876e3', 'Further information is requested'], ['wontfix', 'ffffff', 'This will not be worked on']];
const SUBJECTS = ['Crash when the config file is empty', 'Support dark mode in the dashboard', 'Typo in the README',
  'Widget resize loses focus', 'Add retries to the HTTP client', 'Timeout on large uploads', 'Document the plugin API',
  'Flaky test in widget_spec', 'Memory leak in the renderer', 'Allow custom themes'];

function userObject(login, id) {
  const u = `${API}/users/${login}`;
  return {
    login, id, node_id: Buffer.from(`04:User${id}`).toString('base64'), avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: '', url: u, html_url: `https://github.com/${login}`, followers_url: `${u}/followers`,
    following_url: `${u}/following{/other_user}`, gists_url: `${u}/gists{/gist_id}`, starred_url: `${u}/starred{/owner}{/repo}`,
    subscriptions_url: `${u}/subscriptions`, organizations_url: `${u}/orgs`, repos_url: `${u}/repos`, events_url: `${u}/events{/privacy}`,
    received_events_url: `${u}/received_events`, type: 'User', user_view_type: 'public', site_admin: false,
  };
}

function labelObject([name, color, description], i) {
  return { id: 208045946 + i, node_id: Buffer.from(`03:Label${i}`).toString('base64'),
    url: `${API}/repos/${OWNER}/${REPO}/labels/${encodeURIComponent(name)}`, name, color, default: i < 3, description };
}

function repoObject(owner) {
  const r = `${API}/repos/${OWNER}/${REPO}`;
  const urls = Object.fromEntries(['forks', 'keys', 'collaborators', 'teams', 'hooks', 'issue_events', 'events', 'assignees',
    'branches', 'tags', 'blobs', 'git_tags', 'git_refs', 'trees', 'statuses', 'languages', 'stargazers', 'contributors',
    'subscribers', 'subscription', 'commits', 'git_commits', 'comments', 'issue_comment', 'contents', 'compare', 'merges',
    'archive', 'downloads', 'issues', 'pulls', 'milestones', 'notifications', 'labels', 'releases', 'deployments']
    .map((k) => [`${k}_url`, `${r}/${k}`]));
  return {
    id: 1296269, node_id: 'MDEwOlJlcG9zaXRvcnkxMjk2MjY5', name: REPO, full_name: `${OWNER}/${REPO}`, private: false, owner,
    html_url: `https://github.com/${OWNER}/${REPO}`, description: 'Widgets for every dashboard', fork: false, url: r, ...urls,
    created_at: '2021-03-01T10:00:00Z', updated_at: '2025-09-28T12:00:00Z', pushed_at: '2025-09-28T11:59:00Z',
    git_url: `git://github.com/${OWNER}/${REPO}.git`, ssh_url: `git@github.com:${OWNER}/${REPO}.git`,
    clone_url: `https://github.com/${OWNER}/${REPO}.git`, svn_url: `https://github.com/${OWNER}/${REPO}`, homepage: null,
    size: 10842, stargazers_count: 1873, watchers_count: 1873, language: 'TypeScript', has_issues: true, has_projects: true,
    has_downloads: true, has_wiki: false, has_pages: false, has_discussions: true, forks_count: 214, mirror_url: null,
    archived: false, disabled: false, open_issues_count: 0, license: { key: 'mit', name: 'MIT License', spdx_id: 'MIT',
      url: `${API}/licenses/mit`, node_id: 'MDc6TGljZW5zZTEz' }, allow_forking: true, is_template: false,
    web_commit_signoff_required: false, topics: ['dashboard', 'widgets'], visibility: 'public', forks: 214, open_issues: 0,
    watchers: 1873, default_branch: 'main',
  };
}

export function githubData() {
  const rand = random(0x61781);
  const users = LOGINS.map((login, i) => userObject(login, 583231 + i * 17));
  const labels = LABELS.map(labelObject);
  const org = { ...userObject(OWNER, 9919), type: 'Organization' };
  const repo = repoObject(org);
  const issues = [];
  const t0 = Date.UTC(2024, 6, 1);
  for (let number = 1; number <= 230; number += 1) {
    const isPull = number % 6 === 0;
    const user = users[Math.floor(rand() ** 1.6 * users.length)];
    const created = new Date(t0 + (number / 230) * 455 * 86400e3 + Math.floor(rand() * 36e5));
    const open = rand() < (isPull ? 0.3 : 0.45);
    const closed = open ? null : new Date(created.getTime() + Math.floor((1 + rand() * 20) * 86400e3));
    const mine = labels.filter(() => rand() < 0.22);
    const assignee = rand() < 0.5 ? pick(rand, users) : null;
    const i = `${API}/repos/${OWNER}/${REPO}/issues/${number}`;
    const issue = {
      url: i, repository_url: `${API}/repos/${OWNER}/${REPO}`, labels_url: `${i}/labels{/name}`, comments_url: `${i}/comments`,
      events_url: `${i}/events`, html_url: `https://github.com/${OWNER}/${REPO}/${isPull ? 'pull' : 'issues'}/${number}`,
      id: 2000000000 + number * 7919, node_id: Buffer.from(`${isPull ? 'PR' : 'I'}_${number}`).toString('base64'), number,
      title: `${pick(rand, SUBJECTS)} (#${number})`, user, labels: mine, state: open ? 'open' : 'closed', locked: false,
      assignee, assignees: assignee ? [assignee] : [], milestone: null, comments: Math.floor(rand() * 12),
      created_at: iso(created), updated_at: iso(closed ?? created),
      closed_at: closed ? iso(closed) : null, author_association: 'CONTRIBUTOR',
      type: null, active_lock_reason: null, sub_issues_summary: { total: 0, completed: 0, percent_completed: 0 },
      body: `Steps to reproduce:\n1. Open the dashboard\n2. Add a widget\n\nExpected: it works. Actual: see the title (#${number}).`,
      closed_by: closed ? pick(rand, users) : null,
      reactions: { url: `${i}/reactions`, total_count: 0, '+1': 0, '-1': 0, laugh: 0, hooray: 0, confused: 0, heart: 0, rocket: 0, eyes: 0 },
      timeline_url: `${i}/timeline`, performed_via_github_app: null, state_reason: open ? null : 'completed',
    };
    if (isPull) {
      const merged = closed && rand() < 0.8 ? iso(closed) : null;
      const p = `${API}/repos/${OWNER}/${REPO}/pulls/${number}`;
      issue.pull_request = { url: p, html_url: `https://github.com/${OWNER}/${REPO}/pull/${number}`,
        diff_url: `https://github.com/${OWNER}/${REPO}/pull/${number}.diff`, patch_url: `https://github.com/${OWNER}/${REPO}/pull/${number}.patch`, merged_at: merged };
      issue.draft = false;
    }
    issues.push(issue);
  }
  repo.open_issues_count = repo.open_issues = issues.filter((x) => x.state === 'open').length;
  return { users, labels, repo, issues: issues.reverse() };  // newest first, GitHub's default order
}

function pullObject(data, issue) {
  const sha = (n) => (n * 2654435761 % 2 ** 32).toString(16).padStart(8, '0').repeat(5);
  const branch = (ref, n) => ({ label: `${OWNER}:${ref}`, ref, sha: sha(n), user: data.repo.owner, repo: data.repo });
  const p = issue.pull_request.url;
  return {
    url: p, id: issue.id + 1, node_id: issue.node_id, html_url: issue.pull_request.html_url, diff_url: issue.pull_request.diff_url,
    patch_url: issue.pull_request.patch_url, issue_url: issue.url, number: issue.number, state: issue.state, locked: false,
    title: issue.title, user: issue.user, body: issue.body, created_at: issue.created_at, updated_at: issue.updated_at,
    closed_at: issue.closed_at, merged_at: issue.pull_request.merged_at, merge_commit_sha: issue.pull_request.merged_at ? sha(issue.number + 7) : null,
    assignee: issue.assignee, assignees: issue.assignees, requested_reviewers: [], requested_teams: [], labels: issue.labels,
    milestone: null, draft: false, commits_url: `${p}/commits`, review_comments_url: `${p}/comments`,
    review_comment_url: `${API}/repos/${OWNER}/${REPO}/pulls/comments{/number}`, comments_url: `${issue.url}/comments`,
    statuses_url: `${API}/repos/${OWNER}/${REPO}/statuses/${sha(issue.number)}`, head: branch(`feature-${issue.number}`, issue.number),
    base: branch('main', 1), _links: { self: { href: p }, html: { href: issue.pull_request.html_url }, issue: { href: issue.url },
      comments: { href: `${issue.url}/comments` }, review_comments: { href: `${p}/comments` }, review_comment: { href: `${API}/repos/${OWNER}/${REPO}/pulls/comments{/number}` },
      commits: { href: `${p}/commits` }, statuses: { href: `${API}/repos/${OWNER}/${REPO}/statuses/${sha(issue.number)}` } },
    author_association: 'CONTRIBUTOR', auto_merge: null, active_lock_reason: null,
  };
}

const notFound = { status: 404, body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' } };

function invalid(field, value, resource) {
  return { status: 422, body: { message: 'Validation Failed', errors: [{ value, resource, field, code: 'invalid' }],
    documentation_url: 'https://docs.github.com/rest/issues/issues#list-repository-issues', status: '422' } };
}

// One page by `per_page` (1-100, default 30) and `page`, with GitHub's Link header. Its URLs
// name the server that answered, as api.github.com's name itself.
function paged(items, query, path, host) {
  const perPage = Math.max(1, Math.min(100, Number(query.get('per_page') ?? 30) || 30));
  const pageNo = Math.max(1, Number(query.get('page') ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const link = (n) => {
    const q = new URLSearchParams(query);
    q.set('per_page', String(perPage));
    q.set('page', String(n));
    return `<http://${host}${path}?${q}>`;
  };
  const rels = [];
  if (pageNo < last) rels.push(`${link(pageNo + 1)}; rel="next"`, `${link(last)}; rel="last"`);
  if (pageNo > 1) rels.push(`${link(1)}; rel="first"`, `${link(pageNo - 1)}; rel="prev"`);
  return { status: 200, body: items.slice((pageNo - 1) * perPage, pageNo * perPage), headers: rels.length ? { link: rels.join(', ') } : {} };
}

function handle(data, { method, path, query, headers }) {
  if (method !== 'GET') return notFound;
  const base = `/repos/${OWNER}/${REPO}`;
  let m;
  if (path === base) return { status: 200, body: data.repo };
  if ((m = /^\/users\/([^/]+)$/.exec(path))) {
    const user = data.users.find((u) => u.login.toLowerCase() === m[1].toLowerCase());
    return user ? { status: 200, body: { ...user, name: user.login, company: null, blog: '', location: null, email: null,
      hireable: null, bio: null, twitter_username: null, public_repos: 8, public_gists: 1, followers: 20, following: 0,
      created_at: '2012-01-01T00:00:00Z', updated_at: '2025-09-01T00:00:00Z' } } : notFound;
  }
  if (path === `${base}/issues`) {
    const state = query.get('state') ?? 'open';
    if (!['open', 'closed', 'all'].includes(state)) return invalid('state', state, 'Issue');
    let list = data.issues.filter((x) => state === 'all' || x.state === state);
    const labels = query.get('labels');
    if (labels) {
      const want = labels.split(',').map((s) => s.trim().toLowerCase());
      list = list.filter((x) => want.every((w) => x.labels.some((l) => l.name.toLowerCase() === w)));
    }
    for (const key of ['creator', 'assignee']) {
      const who = query.get(key);
      if (who) list = list.filter((x) => (key === 'creator' ? x.user : x.assignee)?.login === who);
    }
    const since = query.get('since');
    if (since) list = list.filter((x) => x.updated_at >= since);
    if (query.get('direction') === 'asc') list = [...list].reverse();
    return paged(list, query, path, headers.host);
  }
  if ((m = /^\/repos\/octo-org\/widgets\/issues\/(\d+)$/.exec(path))) {
    const issue = data.issues.find((x) => x.number === Number(m[1]));
    return issue ? { status: 200, body: issue } : notFound;
  }
  if (path === `${base}/pulls`) {
    const state = query.get('state') ?? 'open';
    if (!['open', 'closed', 'all'].includes(state)) return invalid('state', state, 'PullRequest');
    const list = data.issues.filter((x) => x.pull_request && (state === 'all' || x.state === state)).map((x) => pullObject(data, x));
    return paged(list, query, path, headers.host);
  }
  return notFound;
}

// Starts a fake GitHub API on 127.0.0.1 (port 0) over a fresh copy of the seeded repository.
export async function startGithub() {
  const data = githubData();
  const server = await serve({
    token: GITHUB_TOKEN,
    handle: (request) => handle(data, request),
    anonymous: true,
    unauthorized: () => ({ status: 401, body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' } }),
  });
  return { ...server, data };
}
