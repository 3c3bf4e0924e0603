// The isolation layers by name, and the check that a deployment got the ones it requires.
//
// A sandbox process reports one line per layer when it is ready ("namespaces: on (...)",
// lockdown.h). Where the kernel or a container runtime refuses a layer, the line says "off" or
// "partial" and the process still serves: that is the right default on a developer's machine,
// and the wrong one for a deployment whose security review assumed every layer. A required
// set, checked at start-up against a probe process's report, turns "silently weaker" into
// "refuses to start, naming the layer and the kernel's reason".
//
// Plain data and pure functions: no process is started here (probe_layers() in sandbox.h does
// that), so the rules are tested without one.
#pragma once

#include <bitset>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace codemode::sandbox {

// The layers a sandbox process applies to itself, in the order its report lists them. `jitless`
// is not among them: it is a choice of V8 mode (config's sandbox.jitless), not something the
// machine can refuse.
enum class Layer {
  process,        // no environment but TZ, only the channel descriptor
  namespaces,     // new user, network, mount and IPC namespaces
  rlimits,        // no core dumps, 16 open files, a CPU cap
  address_space,  // RLIMIT_AS
  empty_root,     // chroot into an empty tmpfs (needs the mount namespace)
  no_new_privs,   // PR_SET_NO_NEW_PRIVS
  seccomp,        // the allow-list filter
};
inline constexpr std::size_t kLayerCount = 7;

// The name on the command line (`address-space`, `no-new-privs`).
std::string_view option_name(Layer layer);
// The name that starts the layer's report line (`address space`, `no_new_privs`).
std::string_view report_name(Layer layer);

class LayerSet {
 public:
  static LayerSet all();
  void add(Layer layer) { bits_.set(static_cast<std::size_t>(layer)); }
  bool contains(Layer layer) const { return bits_.test(static_cast<std::size_t>(layer)); }
  bool empty() const { return bits_.none(); }
  bool operator==(const LayerSet&) const = default;

 private:
  std::bitset<kLayerCount> bits_;
};

// `all`, `none`, or a comma-separated list of option names (`namespaces,empty-root`): the set,
// or one line saying what is wrong with the text (a CLI error, after the option's name).
struct LayerSetError {
  std::string message;
};
std::variant<LayerSet, LayerSetError> parse_layer_set(std::string_view text);

// The report lines of the required layers that are not fully on ("off" or "partial", or absent
// from the report), in report order. Empty: every required layer holds.
std::vector<std::string> missing_layers(const std::vector<std::string>& report,
                                        const LayerSet& required);

}  // namespace codemode::sandbox
