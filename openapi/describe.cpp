#include "openapi/describe.h"

#include <algorithm>
#include <map>

#include "openapi/operations.h"

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kSearchDeclarations = R"ts(declare const spec: {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers?: { url: string; description?: string }[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, PathItem>; // e.g. spec.paths["/orders/{orderId}"].get
  components?: Record<string, Record<string, unknown>>;
};
type Method = "get" | "put" | "post" | "delete" | "patch" | "head" | "options";
type PathItem = Partial<Record<Method, Operation>> & { parameters?: Parameter[] };
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}
interface Parameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required?: boolean;
  description?: string;
  schema?: Schema;
}
// $refs are already resolved; a ref that would loop back shows as { $circular: "#/..." }.
type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  description?: string;
  [keyword: string]: unknown;
} | { $circular: string };)ts";

constexpr std::string_view kExecuteDeclarations =
    R"ts(declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
interface RequestInit {
  method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers?: Headers | Record<string, string> | [string, string][];
  body?: string | URLSearchParams | ArrayBuffer | Uint8Array; // JSON: JSON.stringify(data)
}
interface Response {
  readonly status: number;
  readonly ok: boolean;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;
  readonly redirected: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  clone(): Response;
}
declare class Headers {
  constructor(init?: Headers | Record<string, string> | [string, string][]);
  get(name: string): string | null;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  has(name: string): boolean;
  delete(name: string): void;
  entries(): IterableIterator<[string, string]>;
}
declare class Request {
  constructor(input: string | URL | Request, init?: RequestInit);
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
}
declare class URL {
  constructor(url: string, base?: string | URL);
  href: string;
  pathname: string;
  search: string;
  readonly searchParams: URLSearchParams;
}
declare class URLSearchParams {
  constructor(init?: string | Record<string, string> | [string, string][]);
  append(name: string, value: string): void;
  get(name: string): string | null;
  set(name: string, value: string): void;
  toString(): string;
})ts";

std::string limits_text(const DescribeOptions& o) {
  return "Limits per call: " + std::to_string(o.cpu_ms) + " ms CPU, " + std::to_string(o.wall_ms) +
         " ms wall time, " + std::to_string(o.heap_mb) + " MB heap, code up to " +
         std::to_string(o.code_chars) + " characters; results over " +
         std::to_string(o.result_chars) +
         " characters are cut, so return only what you need (select fields, slice arrays). "
         "console.log output comes back with the result. Also available: URL, "
         "URLSearchParams, TextEncoder/TextDecoder, atob/btoa, structuredClone, setTimeout.";
}

// "pets (4), store (3), …" — cut to fit `budget` characters.
std::string tag_index(const Document& document, std::size_t budget) {
  std::map<std::string, std::size_t> counts;
  std::vector<std::string> order;
  const auto& root = *document.root;
  if (auto tags = root.find("tags"); tags != root.end() && tags->is_array()) {
    for (const auto& tag : *tags) {
      if (tag.is_object() && tag.contains("name") && tag["name"].is_string()) {
        const std::string name = tag["name"].get<std::string>();
        if (counts.emplace(name, 0).second) order.push_back(name);
      }
    }
  }
  const auto paths = root.find("paths");
  std::size_t untagged = 0;
  if (paths != root.end() && paths->is_object()) {
    for (const auto& [path, item] : paths->items()) {
      const json* node = &item;
      if (const auto* ref = document.refs.find(node); ref && ref->target) node = ref->target;
      if (!node->is_object()) continue;
      for (const auto& [method, op] : node->items()) {
        if (method == "parameters" || !op.is_object()) continue;
        const auto tags = op.find("tags");
        if (tags == op.end() || !tags->is_array() || tags->empty()) {
          ++untagged;
          continue;
        }
        for (const auto& tag : *tags) {
          if (!tag.is_string()) continue;
          const std::string name = tag.get<std::string>();
          if (counts.emplace(name, 0).second) order.push_back(name);
          ++counts[name];
        }
      }
    }
  }
  std::string out;
  std::size_t shown = 0;
  for (const auto& name : order) {
    if (counts[name] == 0) continue;
    std::string entry = name.substr(0, 60) + " (" + std::to_string(counts[name]) + ")";
    if (out.size() + entry.size() + 2 > budget) break;
    out += (out.empty() ? "" : ", ") + entry;
    ++shown;
  }
  std::size_t with_operations = 0;
  for (const auto& [name, count] : counts) with_operations += count > 0 ? 1 : 0;
  if (shown < with_operations) {
    out += ", and " + std::to_string(with_operations - shown) + " more tags";
  }
  if (untagged > 0) out += (out.empty() ? "" : "; ") + std::to_string(untagged) + " untagged";
  return out.empty() ? "none" : out;
}

// A list operation and an item operation under it, for examples that fit this API.
struct ExamplePaths {
  std::string list;  // e.g. "/products"
  std::string item;  // e.g. "/products/{productId}"
};
ExamplePaths example_paths(const Document& document) {
  ExamplePaths out;
  const auto operations = declared_operations(document);
  for (const auto& op : operations) {
    if (op.method != "GET" || op.path_template.find('{') != std::string::npos) continue;
    for (const auto& other : operations) {
      if (other.method == "GET" && other.path_template.rfind(op.path_template + "/{", 0) == 0 &&
          other.path_template.find('/', op.path_template.size() + 1) == std::string::npos) {
        return {op.path_template, other.path_template};
      }
    }
    if (out.list.empty()) out.list = op.path_template;
  }
  return out;
}

std::string servers_text(const Document& document) {
  const auto& root = *document.root;
  std::string out;
  if (auto servers = root.find("servers"); servers != root.end() && servers->is_array()) {
    for (const auto& server : *servers) {
      if (server.is_object() && server.contains("url") && server["url"].is_string()) {
        out += (out.empty() ? "" : ", ") + server["url"].get<std::string>().substr(0, 100);
        if (out.size() > 300) break;
      }
    }
  }
  return out.empty() ? "none listed" : out;
}

std::string fit(std::string text) {
  if (text.size() <= kMaxDescriptionChars) return text;
  return text.substr(0, kMaxDescriptionChars - 1) + "…";
}

}  // namespace

std::string search_declarations() { return std::string(kSearchDeclarations); }
std::string execute_declarations() { return std::string(kExecuteDeclarations); }

std::string describe_search(const Document& document, const DescribeOptions& options) {
  const auto operations = declared_operations(document);
  const ExamplePaths examples = example_paths(document);
  std::string text =
      "Search the OpenAPI description of " + document.title.substr(0, 120) + " (version " +
      document.version.substr(0, 40) + ") by writing one async JavaScript arrow function. It " +
      "runs in a sandbox whose only API global is `spec`, the OpenAPI document with $refs "
      "resolved; it can reach nothing else. Use it to find the endpoints, parameters and "
      "schemas you need, then call them with `execute`.\n\n"
      "API: " +
      std::to_string(document.path_count) + " paths, " + std::to_string(operations.size()) +
      " operations. Servers: " + servers_text(document) +
      ".\nTags (operations): " + tag_index(document, 1500) +
      ".\n\n"
      "```ts\n" +
      search_declarations() +
      "\n```\n\n"
      "Examples:\n"
      "// Operations whose path or summary mentions a word\n"
      "async () => Object.entries(spec.paths).flatMap(([path, item]) =>\n"
      "  Object.entries(item).filter(([m]) => m !== 'parameters').map(([m, op]) =>\n"
      "    ({ method: m.toUpperCase(), path, summary: op.summary })))\n"
      "  .filter((o) => /order/i.test(o.path + ' ' + o.summary))\n";
  const std::string path = examples.item.empty() ? examples.list : examples.item;
  if (!path.empty()) {
    text +=
        "// One operation: its parameters and response schema\n"
        "async () => { const op = spec.paths['" +
        path.substr(0, 120) +
        "'].get;\n"
        "  return { params: op.parameters?.map((p) => [p.name, p.in, p.required]),\n"
        "           ok: op.responses['200']?.content?.['application/json']?.schema }; }\n";
  }
  text +=
      "// Operations by tag\n"
      "async () => { const byTag = {}; for (const [path, item] of Object.entries(spec.paths))\n"
      "  for (const [m, op] of Object.entries(item)) for (const t of op.tags ?? [])\n"
      "    (byTag[t] ?\?= []).push(m.toUpperCase() + ' ' + path); return byTag; }\n\n"
      "Large schemas expand through shared $refs: return the fields you need, not whole "
      "operations of big APIs.\n" +
      limits_text(options);
  return fit(std::move(text));
}

std::string describe_execute(const Document& document, const DescribeOptions& options) {
  std::string origins;
  for (const auto& origin : options.origins) origins += (origins.empty() ? "" : ", ") + origin;
  const ExamplePaths examples = example_paths(document);
  std::string text = "Call " + document.title.substr(0, 120) +
                     " (HTTP) by writing one async JavaScript arrow function that uses fetch(). ";
  if (origins.empty()) {
    text += "No upstream is configured: every request is refused.";
  } else {
    text += "Requests may go only to: " + origins + "; a relative URL such as '" +
            (examples.list.empty() ? std::string("/path") : examples.list.substr(0, 100)) +
            "' resolves against " + options.origins.front() + options.base_path + ".";
  }
  text +=
      " Authentication is added by the server: do not set credentials (they are replaced, "
      "and the code never sees them). At most " +
      std::to_string(options.subrequests) +
      " requests per call; responses are bounded in size; redirects are followed only "
      "within the same origin.";
  if (options.spec_operations_only) {
    text +=
        " Only operations declared in the API description may be called (find them with "
        "`search`).";
  }
  if (!options.methods.empty()) {
    std::string methods;
    for (const auto& m : options.methods) methods += (methods.empty() ? "" : ", ") + m;
    text += " Allowed methods: " + methods + ".";
  }
  text +=
      " A refused request throws a TypeError; HTTP error statuses are ordinary responses "
      "(check res.ok).\n\n```ts\n" +
      execute_declarations() +
      "\n```\n\n"
      "Example (chains two calls, returns a compact result):\n";
  if (!examples.item.empty()) {
    text +=
        "async () => {\n"
        "  const list = await (await fetch('" +
        examples.list.substr(0, 100) +
        "?limit=3')).json();\n"
        "  const first = (list.items ?? list)[0];\n"
        "  const res = await fetch(`" +
        examples.list.substr(0, 100) +
        "/${first.id}`);\n"
        "  if (!res.ok) return { status: res.status, error: await res.text() };\n"
        "  return await res.json();\n"
        "}\n";
  } else {
    text +=
        "async () => {\n"
        "  const res = await fetch('/path');\n"
        "  if (!res.ok) return { status: res.status, error: await res.text() };\n"
        "  const data = await res.json();\n"
        "  return Array.isArray(data) ? data.slice(0, 5) : data;\n"
        "}\n";
  }
  text += "\n" + limits_text(options);
  return fit(std::move(text));
}

}  // namespace codemode::openapi
