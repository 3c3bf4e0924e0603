#include "sandbox/layers.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace codemode::sandbox;

namespace {

LayerSet set_of(std::string_view text) {
  auto parsed = parse_layer_set(text);
  REQUIRE(std::holds_alternative<LayerSet>(parsed));
  return std::get<LayerSet>(parsed);
}

std::string error_of(std::string_view text) {
  auto parsed = parse_layer_set(text);
  REQUIRE(std::holds_alternative<LayerSetError>(parsed));
  return std::get<LayerSetError>(parsed).message;
}

// What a sandbox process reports under Docker's default seccomp profile (unshare refused).
const std::vector<std::string> kDockerDefault = {
    "process: on (no environment but TZ, only the channel descriptor)",
    "namespaces: off (unshare refused: Operation not permitted)",
    "rlimits: on (no core dumps, 16 open files, 760 s CPU per process)",
    "address space: on (14312 MiB)",
    "empty root: off (no mount namespace)",
    "no_new_privs: on",
    "seccomp: on (allow-list; no socket, connect, open, execve, ptrace, fork, io_uring; others "
    "EPERM)",
    "jitless: no (V8's JIT compilers run; sandbox.jitless turns them off)",
};

}  // namespace

TEST_CASE("a layer set is all, none or a list of layer names", "[sandbox][layers]") {
  const LayerSet all = set_of("all");
  for (const Layer layer : {Layer::process, Layer::namespaces, Layer::rlimits, Layer::address_space,
                            Layer::empty_root, Layer::no_new_privs, Layer::seccomp}) {
    CHECK(all.contains(layer));
  }
  CHECK(set_of("none").empty());
  const LayerSet two = set_of("namespaces,empty-root");
  CHECK(two.contains(Layer::namespaces));
  CHECK(two.contains(Layer::empty_root));
  CHECK_FALSE(two.contains(Layer::seccomp));
  CHECK(set_of("process,namespaces,rlimits,address-space,empty-root,no-new-privs,seccomp") == all);
}

TEST_CASE("an unknown layer name is an error that lists the known ones", "[sandbox][layers]") {
  const std::string known =
      " is not a sandbox layer (known: all, none, process, namespaces, rlimits, address-space, "
      "empty-root, no-new-privs, seccomp)";
  CHECK(error_of("everything") == "'everything'" + known);
  CHECK(error_of("") == "''" + known);
  CHECK(error_of("namespaces,") == "''" + known);
  CHECK(error_of("empty root") == "'empty root'" + known);
  CHECK(error_of("seccomp,all") == "'all' stands alone, not in a list");
  CHECK(error_of("none,seccomp") == "'none' stands alone, not in a list");
  CHECK(error_of("jitless") == "'jitless'" + known);
}

TEST_CASE("missing layers are the required ones not fully on, as reported", "[sandbox][layers]") {
  CHECK(missing_layers(kDockerDefault, set_of("all")) ==
        std::vector<std::string>{"namespaces: off (unshare refused: Operation not permitted)",
                                 "empty root: off (no mount namespace)"});
  CHECK(missing_layers(kDockerDefault, set_of("seccomp,no-new-privs,process")).empty());
  CHECK(missing_layers(kDockerDefault, LayerSet{}).empty());

  std::vector<std::string> partial = kDockerDefault;
  partial[1] = "namespaces: partial (network, mount, ipc; user refused: Operation not permitted)";
  partial[2] = "rlimits: partial (refused: cpu)";
  partial[4] = "empty root: on (chroot into an empty tmpfs)";
  CHECK(missing_layers(partial, set_of("namespaces,rlimits,empty-root")) ==
        std::vector<std::string>{
            "namespaces: partial (network, mount, ipc; user refused: Operation not permitted)",
            "rlimits: partial (refused: cpu)"});
  // A line that merely starts like "on" is not on.
  CHECK(missing_layers({"seccomp: only some"}, set_of("seccomp")) ==
        std::vector<std::string>{"seccomp: only some"});
  CHECK(missing_layers({"no_new_privs: on"}, set_of("no-new-privs")).empty());
  CHECK(missing_layers({}, set_of("seccomp")) ==
        std::vector<std::string>{"seccomp: not reported by the sandbox process"});
}
