#include "openapi/describe.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "openapi/operations.h"

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

// The declarations are what a model cannot guess: `spec`'s shape and `spec.describe`. The web
// globals are the browser's, which a model knows; the description names the ones a model reaches
// for and could not assume in a sandbox (each is run in tests/e2e/web_apis.test.mjs).
constexpr std::string_view kSearchDeclarations = R"ts(declare const spec: {
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>; // spec.paths['/a/{id}'].get
  components?: Record<string, Record<string, any>>; // $refs resolved; loops: { $circular: ref }
  // One operation as a TypeScript declaration: parameters, body, responses, named schemas.
  describe(operation: string): string; // an operationId or 'GET /a/{id}'
};
interface Operation {
  operationId?: string; summary?: string; tags?: string[];
  parameters?: any[]; requestBody?: any; responses: Record<string, any>;
})ts";

constexpr std::string_view kExecuteDeclarations =
    R"ts(declare function fetch(url: string, init?: {
  method?: string; headers?: Record<string, string>; body?: string; // or URLSearchParams, FormData, Blob
}): Promise<{ ok: boolean; status: number; headers: { get(name: string): string | null };
  json(): Promise<any>; text(): Promise<string> }>;
// As in browsers: Headers, URL, URLSearchParams, AbortController, Blob, FormData, TextEncoder/Decoder,
// structuredClone, atob/btoa, crypto.randomUUID/getRandomValues/subtle.digest, performance.now)ts";

std::string limits_text(const DescribeOptions& o) {
  return "Limits per call: " + std::to_string(o.cpu_ms) + " ms CPU, " + std::to_string(o.heap_mb) +
         " MB heap; a result over " + std::to_string(o.result_chars) +
         " characters is cut (still JSON): return only the fields you need. console.log output "
         "comes back too.";
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

// The list operation's page-size query parameter, for the execute example ("limit=3",
// GitHub's "per_page=3"): a parameter the API declares, or none, so the example is a request
// the API takes as written.
std::string page_size_query(const Document& document, const std::string& list_path) {
  static constexpr std::string_view kNames[] = {"limit",    "per_page",    "page_size",  "pageSize",
                                                "count",    "max_results", "maxResults", "size",
                                                "pagesize", "perPage"};
  const auto& root = *document.root;
  const auto paths = root.find("paths");
  if (list_path.empty() || paths == root.end() || !paths->is_object()) return "";
  const auto item_it = paths->find(list_path);
  if (item_it == paths->end()) return "";
  const json* item = &*item_it;
  if (const auto* ref = document.refs.find(item); ref && ref->target) item = ref->target;
  if (!item->is_object()) return "";
  std::vector<std::string> query;
  const auto collect = [&](const json& node) {
    const auto parameters = node.find("parameters");
    if (parameters == node.end() || !parameters->is_array()) return;
    for (const auto& parameter : *parameters) {
      const json* p = &parameter;
      if (const auto* ref = document.refs.find(p); ref && ref->target) p = ref->target;
      if (p->is_object() && p->value("in", "") == "query" && p->contains("name") &&
          (*p)["name"].is_string()) {
        query.push_back((*p)["name"].get<std::string>());
      }
    }
  };
  if (const auto get = item->find("get"); get != item->end() && get->is_object()) collect(*get);
  collect(*item);
  for (const auto name : kNames) {
    if (std::find(query.begin(), query.end(), name) != query.end()) {
      return "?" + std::string(name) + "=3";
    }
  }
  return "";
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

// "Tags (operations): …\n", or nothing when no operation has a tag (Stripe's 452): a line of
// tags to search by is only worth its tokens when there are some.
std::string tags_line(const Document& document) {
  const std::string index = tag_index(document, 250);
  if (index.find(" (") == std::string::npos) return "";
  return "Tags (operations): " + index + ".\n";
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
      "Search the OpenAPI description of " + document.title.substr(0, 120) +
      " with code: a "
      "JavaScript or TypeScript function (async () => …) or statements ending in return, run "
      "in a sandbox whose only API global is `spec`. Find operations and schemas here; call "
      "them with `execute`.\n" +
      std::to_string(document.path_count) + " paths, " + std::to_string(operations.size()) +
      " operations. Servers: " + servers_text(document) + ".\n" + tags_line(document) + "```ts\n" +
      search_declarations() +
      "\n```\nExamples:\n"
      "async () => Object.entries(spec.paths).flatMap(([path, item]) => Object.entries(item)\n"
      "  .filter(([, op]) => /order/i.test(path + op.summary)).map(([m, op]) => `${m} ${path} "
      "${op.operationId}`))\n";
  const std::string path = examples.item.empty() ? examples.list : examples.item;
  if (!path.empty()) {
    text += "async () => spec.describe('GET " + path.substr(0, 120) + "') // or spec.paths['" +
            path.substr(0, 120) + "'].get\n";
  }
  text += limits_text(options);
  return fit(std::move(text));
}

std::string describe_execute(const Document& document, const DescribeOptions& options) {
  std::string origins;
  for (const auto& origin : options.origins) origins += (origins.empty() ? "" : ", ") + origin;
  const ExamplePaths examples = example_paths(document);
  const std::string list =
      examples.list.empty() ? std::string("/path") : examples.list.substr(0, 100);
  std::string text = "Call " + document.title.substr(0, 120) +
                     " over HTTP with fetch(), from code shaped as for `search`. ";
  if (origins.empty()) {
    text += "No upstream is configured: every request is refused.";
  } else {
    text += "Requests may go only to: " + origins + "; a relative URL such as '" + list +
            "' resolves against " + options.origins.front() + options.base_path + ".";
  }
  text += " The server adds authentication: never set credentials. At most " +
          std::to_string(options.subrequests) +
          " requests per call. A refused request throws a TypeError.";
  if (options.spec_operations_only) {
    text += " Only operations declared in the API description may be called.";
  }
  if (!options.methods.empty()) {
    std::string methods;
    for (const auto& m : options.methods) methods += (methods.empty() ? "" : ", ") + m;
    text += " Allowed methods: " + methods + ".";
  }
  text += "\n```ts\n" + execute_declarations() +
          "\n```\nExample:\nasync () => {\n  const res = await fetch('" + list +
          page_size_query(document, examples.list) +
          "');\n  if (!res.ok) return { status: res.status, body: (await res.text())"
          ".slice(0, 300) };\n  return await res.json();\n}\nLimits: as for `search`.";
  return fit(std::move(text));
}

}  // namespace codemode::openapi
