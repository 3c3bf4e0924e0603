#include "openapi/swagger2.h"

#include <algorithm>
#include <optional>
#include <set>

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

constexpr const char* kMethods[] = {"get", "put", "post", "delete", "options", "head", "patch"};

// Members of a 2.0 parameter or header that describe its value, not the parameter itself.
constexpr const char* kSchemaMembers[] = {
    "type",      "format",           "items",    "collectionFormat", "default",
    "maximum",   "exclusiveMaximum", "minimum",  "exclusiveMinimum", "maxLength",
    "minLength", "pattern",          "maxItems", "minItems",         "uniqueItems",
    "enum",      "multipleOf"};

// The document is untrusted and json::value() throws when a member has another type than the
// fallback: these read a member of the wrong type (or of a non-object) as absent.
std::string string_member(const json& node, const char* key) {
  if (!node.is_object()) return "";
  const auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

bool true_member(const json& node, const char* key) {
  if (!node.is_object()) return false;
  const auto it = node.find(key);
  return it != node.end() && it->is_boolean() && it->get<bool>();
}

json member(const json& node, const char* key, json fallback) {
  if (!node.is_object()) return fallback;
  const auto it = node.find(key);
  return it != node.end() && it->type() == fallback.type() ? *it : fallback;
}

class Converter {
 public:
  Converter(const json& root, std::vector<std::string>& warnings)
      : root_(root), warnings_(warnings) {
    if (auto p = root.find("parameters"); p != root.end() && p->is_object()) {
      for (const auto& [name, parameter] : p->items()) {
        if (parameter.is_object() && string_member(parameter, "in") == "body")
          body_params_.insert(name);
      }
    }
  }

  json convert() {
    json out = json::object();
    out["openapi"] = "3.0.3";
    out["x-swagger-version"] = "2.0";
    for (const auto& [key, value] : root_.items()) {
      if (key == "swagger") continue;
      if (key == "host" || key == "basePath" || key == "schemes" || key == "consumes" ||
          key == "produces" || key == "definitions" || key == "parameters" || key == "responses" ||
          key == "securityDefinitions") {
        continue;  // carried over below
      }
      if (key == "paths") {
        out["paths"] = paths(value);
      } else {
        out[key] = rewrite_refs(value);
      }
      if (key == "info") out["servers"] = servers();
    }
    if (!out.contains("servers")) out["servers"] = servers();
    json components = json::object();
    if (auto d = root_.find("definitions"); d != root_.end()) {
      components["schemas"] = rewrite_refs(*d);
    }
    if (auto p = root_.find("parameters"); p != root_.end() && p->is_object()) {
      for (const auto& [name, parameter] : p->items()) {
        if (body_params_.count(name) != 0) {
          components["requestBodies"][name] = request_body({parameter}, consumes(root_));
        } else {
          components["parameters"][name] = parameter_of(parameter);
        }
      }
    }
    if (auto r = root_.find("responses"); r != root_.end() && r->is_object()) {
      for (const auto& [name, response] : r->items()) {
        components["responses"][name] = response_of(response, produces(root_));
      }
    }
    if (auto s = root_.find("securityDefinitions"); s != root_.end() && s->is_object()) {
      for (const auto& [name, scheme] : s->items()) {
        components["securitySchemes"][name] = security_scheme(scheme);
      }
    }
    if (!components.empty()) out["components"] = std::move(components);
    return out;
  }

 private:
  json servers() const {
    const std::string host = string_member(root_, "host");
    std::string base = string_member(root_, "basePath");
    if (!base.empty() && base.front() != '/') base = "/" + base;
    json list = json::array();
    std::vector<std::string> schemes;
    if (auto s = root_.find("schemes"); s != root_.end() && s->is_array()) {
      for (const auto& scheme : *s) {
        if (scheme.is_string()) schemes.push_back(scheme.get<std::string>());
      }
    }
    if (host.empty()) {
      list.push_back(json{{"url", base.empty() ? "/" : base}});
      return list;
    }
    if (schemes.empty()) schemes.push_back("https");
    const std::string after_scheme = "://" + host + base;
    for (const auto& scheme : schemes) list.push_back(json{{"url", scheme + after_scheme}});
    return list;
  }

  static std::vector<std::string> media_types(const json& node, const char* key,
                                              std::vector<std::string> fallback) {
    auto list = node.find(key);
    if (list == node.end() || !list->is_array() || list->empty()) return fallback;
    std::vector<std::string> types;
    for (const auto& type : *list) {
      if (type.is_string()) types.push_back(type.get<std::string>());
    }
    return types.empty() ? fallback : types;
  }
  std::vector<std::string> consumes(const json& node) const {
    return media_types(node, "consumes", media_types(root_, "consumes", {"application/json"}));
  }
  std::vector<std::string> produces(const json& node) const {
    return media_types(node, "produces", media_types(root_, "produces", {"application/json"}));
  }

  json rewrite_refs(const json& node) const {
    if (node.is_array()) {
      json out = json::array();
      for (const auto& item : node) out.push_back(rewrite_refs(item));
      return out;
    }
    if (!node.is_object()) return node;
    json out = json::object();
    for (const auto& [key, value] : node.items()) {
      if (key == "$ref" && value.is_string()) {
        out[key] = new_ref(value.get<std::string>());
      } else if (key == "x-nullable") {
        out["nullable"] = value;
      } else {
        out[key] = rewrite_refs(value);
      }
    }
    return out;
  }

  std::string new_ref(const std::string& ref) const {
    auto moved = [&](std::string_view from, std::string_view to) -> std::optional<std::string> {
      if (ref.rfind(from, 0) != 0) return std::nullopt;
      return std::string(to) + ref.substr(from.size());
    };
    if (auto r = moved("#/definitions/", "#/components/schemas/")) return *r;
    if (auto r = moved("#/responses/", "#/components/responses/")) return *r;
    if (ref.rfind("#/parameters/", 0) == 0) {
      const std::string name = ref.substr(std::string_view("#/parameters/").size());
      return (body_params_.count(name) != 0 ? "#/components/requestBodies/"
                                            : "#/components/parameters/") +
             name;
    }
    return ref;
  }

  // A 2.0 non-body parameter (or header): value members move into `schema`.
  json parameter_of(const json& parameter) const {
    if (!parameter.is_object()) return parameter;
    json out = json::object();
    json schema = json::object();
    for (const auto& [key, value] : parameter.items()) {
      if (std::find(std::begin(kSchemaMembers), std::end(kSchemaMembers), key) !=
          std::end(kSchemaMembers)) {
        if (key == "collectionFormat") {
          if (value == "csv") out["style"] = "form", out["explode"] = false;
          if (value == "multi") out["style"] = "form", out["explode"] = true;
          if (value == "pipes") out["style"] = "pipeDelimited";
          if (value == "ssv") out["style"] = "spaceDelimited";
          continue;
        }
        schema[key] = rewrite_refs(value);
      } else if (key == "allowEmptyValue" || key == "name" || key == "in" || key == "description" ||
                 key == "required" || key.rfind("x-", 0) == 0 || key == "$ref") {
        out[key] = key == "$ref" && value.is_string() ? json(new_ref(value.get<std::string>()))
                                                      : rewrite_refs(value);
      }
    }
    if (!schema.empty()) out["schema"] = std::move(schema);
    return out;
  }

  // Body and formData parameters of one operation become its requestBody.
  json request_body(const std::vector<json>& parameters, std::vector<std::string> types) const {
    json body = json::object();
    json form_schema{{"type", "object"}, {"properties", json::object()}};
    bool form = false;
    json schema;
    for (const auto& parameter : parameters) {
      const std::string in = string_member(parameter, "in");
      if (in == "body") {
        schema = rewrite_refs(member(parameter, "schema", json::object()));
        if (parameter.contains("description")) body["description"] = parameter["description"];
        if (true_member(parameter, "required")) body["required"] = true;
      } else if (in == "formData") {
        form = true;
        json property = member(parameter_of(parameter), "schema", json::object());
        if (string_member(parameter, "type") == "file")
          property = {{"type", "string"}, {"format", "binary"}};
        if (parameter.contains("description")) property["description"] = parameter["description"];
        form_schema["properties"][string_member(parameter, "name")] = property;
        if (true_member(parameter, "required"))
          form_schema["required"].push_back(string_member(parameter, "name"));
      }
    }
    if (form) {
      schema = std::move(form_schema);
      std::erase_if(types, [](const std::string& t) {
        return t != "application/x-www-form-urlencoded" && t != "multipart/form-data";
      });
      if (types.empty()) types.push_back("application/x-www-form-urlencoded");
    }
    for (const auto& type : types) body["content"][type]["schema"] = schema;
    return body;
  }

  json response_of(const json& response, const std::vector<std::string>& types) const {
    if (!response.is_object()) return response;
    json out = json::object();
    for (const auto& [key, value] : response.items()) {
      if (key == "schema") {
        for (const auto& type : types) out["content"][type]["schema"] = rewrite_refs(value);
      } else if (key == "headers" && value.is_object()) {
        for (const auto& [name, header] : value.items())
          out["headers"][name] = parameter_of(header);
      } else if (key == "examples" && value.is_object()) {
        for (const auto& [type, example] : value.items()) out["content"][type]["example"] = example;
      } else if (key == "$ref" && value.is_string()) {
        out[key] = new_ref(value.get<std::string>());
      } else {
        out[key] = rewrite_refs(value);
      }
    }
    if (!out.contains("description") && !out.contains("$ref")) out["description"] = "";
    return out;
  }

  json security_scheme(const json& scheme) const {
    if (!scheme.is_object()) return scheme;
    const std::string type = string_member(scheme, "type");
    if (type == "basic") {
      json out{{"type", "http"}, {"scheme", "basic"}};
      if (scheme.contains("description")) out["description"] = scheme["description"];
      return out;
    }
    if (type != "oauth2") return scheme;
    json out{{"type", "oauth2"}};
    if (scheme.contains("description")) out["description"] = scheme["description"];
    const std::string flow = string_member(scheme, "flow");
    const std::string name = flow == "accessCode"    ? "authorizationCode"
                             : flow == "application" ? "clientCredentials"
                                                     : flow;
    json details = json::object();
    for (const char* key : {"authorizationUrl", "tokenUrl"}) {
      if (scheme.contains(key)) details[key] = scheme[key];
    }
    details["scopes"] = member(scheme, "scopes", json::object());
    out["flows"][name] = std::move(details);
    return out;
  }

  json paths(const json& paths) const {
    if (!paths.is_object()) return paths;
    json out = json::object();
    for (const auto& [path, item] : paths.items()) {
      if (!item.is_object()) {
        out[path] = item;
        continue;
      }
      json converted = json::object();
      std::vector<json> shared;  // path-level parameters, resolved for body detection
      for (const auto& [key, value] : item.items()) {
        const bool method =
            std::find(std::begin(kMethods), std::end(kMethods), key) != std::end(kMethods);
        if (method) {
          converted[key] = operation(value, member(item, "parameters", json::array()));
        } else if (key == "parameters") {
          json list = json::array();
          for (const auto& parameter : value) {
            if (!is_body_like(parameter)) list.push_back(parameter_of(parameter));
          }
          if (!list.empty()) converted["parameters"] = std::move(list);
        } else {
          converted[key] = rewrite_refs(value);
        }
      }
      out[path] = std::move(converted);
    }
    return out;
  }

  // A body or formData parameter, written inline or as a ref to a global body parameter.
  bool is_body_like(const json& parameter) const {
    if (!parameter.is_object()) return false;
    if (auto ref = parameter.find("$ref"); ref != parameter.end() && ref->is_string()) {
      const std::string r = ref->get<std::string>();
      return r.rfind("#/parameters/", 0) == 0 &&
             body_params_.count(r.substr(std::string_view("#/parameters/").size())) != 0;
    }
    const std::string in = string_member(parameter, "in");
    return in == "body" || in == "formData";
  }

  json operation(const json& op, const json& path_parameters) const {
    if (!op.is_object()) return op;
    json out = json::object();
    std::vector<json> body_parameters;
    std::string body_ref;
    auto collect = [&](const json& parameters, json& list) {
      if (!parameters.is_array()) return;
      for (const auto& parameter : parameters) {
        if (!is_body_like(parameter)) {
          list.push_back(parameter_of(parameter));
        } else if (auto ref = parameter.find("$ref"); ref != parameter.end() && ref->is_string()) {
          body_ref = new_ref(ref->get<std::string>());
        } else {
          body_parameters.push_back(parameter);
        }
      }
    };
    json parameters = json::array();
    json ignored = json::array();
    collect(path_parameters, ignored);  // only their body parts matter here
    collect(member(op, "parameters", json::array()), parameters);
    for (const auto& [key, value] : op.items()) {
      if (key == "parameters") {
        if (!parameters.empty()) out["parameters"] = parameters;
      } else if (key == "responses" && value.is_object()) {
        for (const auto& [status, response] : value.items()) {
          out["responses"][status] = response_of(response, produces(op));
        }
      } else if (key == "consumes" || key == "produces") {
        continue;  // became the media types of requestBody and responses
      } else if (key == "schemes") {
        warn("operation-level schemes are dropped (servers apply to the whole document)");
      } else {
        out[key] = rewrite_refs(value);
      }
    }
    if (!body_ref.empty()) {
      out["requestBody"] = json{{"$ref", body_ref}};
    } else if (!body_parameters.empty()) {
      out["requestBody"] = request_body(body_parameters, consumes(op));
    }
    return out;
  }

  void warn(std::string message) const {
    if (std::find(warnings_.begin(), warnings_.end(), message) == warnings_.end()) {
      warnings_.push_back(std::move(message));
    }
  }

  const json& root_;
  std::vector<std::string>& warnings_;
  std::set<std::string> body_params_;  // names of global parameters that are `in: body`
};

}  // namespace

json normalise_swagger2(const json& root, std::vector<std::string>& warnings) {
  return Converter(root, warnings).convert();
}

}  // namespace codemode::openapi
