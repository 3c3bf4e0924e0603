#include "sandbox/layers.h"

#include <array>

namespace codemode::sandbox {
namespace {

struct LayerName {
  Layer layer;
  std::string_view option;
  std::string_view report;
};

constexpr std::array<LayerName, kLayerCount> kNames = {{
    {Layer::process, "process", "process"},
    {Layer::namespaces, "namespaces", "namespaces"},
    {Layer::rlimits, "rlimits", "rlimits"},
    {Layer::address_space, "address-space", "address space"},
    {Layer::empty_root, "empty-root", "empty root"},
    {Layer::no_new_privs, "no-new-privs", "no_new_privs"},
    {Layer::seccomp, "seccomp", "seccomp"},
}};

const LayerName& name_of(Layer layer) { return kNames[static_cast<std::size_t>(layer)]; }

std::string known_names() {
  std::string names = "all, none";
  for (const LayerName& name : kNames) {
    names += ", ";
    names += name.option;
  }
  return names;
}

}  // namespace

std::string_view option_name(Layer layer) { return name_of(layer).option; }
std::string_view report_name(Layer layer) { return name_of(layer).report; }

LayerSet LayerSet::all() {
  LayerSet set;
  for (const LayerName& name : kNames) set.add(name.layer);
  return set;
}

std::variant<LayerSet, LayerSetError> parse_layer_set(std::string_view text) {
  if (text == "all") return LayerSet::all();
  if (text == "none") return LayerSet{};
  LayerSet set;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view word = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool known = false;
    for (const LayerName& name : kNames) {
      if (name.option == word) {
        set.add(name.layer);
        known = true;
      }
    }
    if (!known && (word == "all" || word == "none")) {
      return LayerSetError{"'" + std::string(word) + "' stands alone, not in a list"};
    }
    if (!known) {
      return LayerSetError{"'" + std::string(word) +
                           "' is not a sandbox layer (known: " + known_names() + ")"};
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return set;
}

std::vector<std::string> missing_layers(const std::vector<std::string>& report,
                                        const LayerSet& required) {
  std::vector<std::string> missing;
  for (const LayerName& name : kNames) {
    if (!required.contains(name.layer)) continue;
    const std::string prefix = std::string(name.report) + ": ";
    const std::string on = prefix + "on";
    bool found = false;
    for (const std::string& line : report) {
      if (!line.starts_with(prefix)) continue;
      found = true;
      // "on" alone or "on (...)"; "off (...)" and "partial (...)" are missing.
      if (!(line == on || line.starts_with(on + " "))) missing.push_back(line);
    }
    if (!found) missing.push_back(prefix + "not reported by the sandbox process");
  }
  return missing;
}

}  // namespace codemode::sandbox
