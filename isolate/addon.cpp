#include "isolate/addon.h"

#include <node.h>
#include <node_version.h>
#include <signal.h>
#include <unistd.h>
#include <v8.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "channel/process_contract.h"
#include "isolate/v8_platform.h"

namespace codemode::isolate {

std::vector<std::string> addon_arguments(v8::Local<v8::Context> context) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  std::vector<std::string> out;
  v8::Local<v8::Value> process;
  v8::Local<v8::Value> argv;
  if (!context->Global()
           ->Get(context, v8::String::NewFromUtf8Literal(isolate, "process"))
           .ToLocal(&process) ||
      !process->IsObject() ||
      !process.As<v8::Object>()
           ->Get(context, v8::String::NewFromUtf8Literal(isolate, "argv"))
           .ToLocal(&argv) ||
      !argv->IsArray()) {
    return out;
  }
  const v8::Local<v8::Array> array = argv.As<v8::Array>();
  // argv[0] is node, argv[1] the addon (node -e BOOT ADDON ARGS...).
  for (std::uint32_t i = 2; i < array->Length(); ++i) {
    v8::Local<v8::Value> item;
    if (!array->Get(context, i).ToLocal(&item) || !item->IsString()) continue;
    const v8::String::Utf8Value text(isolate, item);
    out.emplace_back(*text != nullptr ? *text : "");
  }
  return out;
}

bool attach_to_node(v8::Local<v8::Context> context) {
  // The headers this addon was built with name the binary it was built for; another node of the
  // same module version would load it, with other V8 fixes in it than the ones we say we run.
  // (CODEMODE_V8_VERSION: the headers' version with node's embedder suffix, NodeEngine.cmake.)
  const std::string expected_node = NODE_VERSION;  // "v26.12.1"
  const std::string expected_v8 = CODEMODE_V8_VERSION;
  const v8::String::Utf8Value running_node(
      v8::Isolate::GetCurrent(),
      context->Global()
          ->Get(context, v8::String::NewFromUtf8Literal(v8::Isolate::GetCurrent(), "process"))
          .ToLocalChecked()
          .As<v8::Object>()
          ->Get(context, v8::String::NewFromUtf8Literal(v8::Isolate::GetCurrent(), "version"))
          .ToLocalChecked());
  const std::string_view running_v8 = v8::V8::GetVersion();
  if (*running_node == nullptr || expected_node != *running_node || running_v8 != expected_v8) {
    (void)std::fprintf(stderr,
                       "codemode-mcp: this addon was built for node %s (V8 %s) and was loaded by "
                       "node %s (V8 %.*s)\n",
                       expected_node.c_str(), expected_v8.c_str(),
                       *running_node != nullptr ? *running_node : "?",
                       static_cast<int>(running_v8.size()), running_v8.data());
    return false;
  }
  attach(context);
  // node's own handlers for these reset the terminal with calls the seccomp filter refuses;
  // SIGUSR1 would start node's inspector (--disable-sigusr1 says so too). signal() fails only
  // for a signal number that does not exist.
  (void)::signal(SIGINT, SIG_DFL);
  (void)::signal(SIGTERM, SIG_DFL);
  (void)::signal(SIGUSR1, SIG_IGN);
  return true;
}

void run_as_program(v8::Local<v8::Context> context, const char* name,
                    int (*program)(int argc, char** argv)) {
  if (!attach_to_node(context)) ::_exit(channel::kExitWrongEngine);
  std::vector<std::string> arguments = addon_arguments(context);
  arguments.insert(arguments.begin(), name);
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const int status = program(static_cast<int>(arguments.size()), argv.data());
  (void)std::fflush(nullptr);
  ::_exit(status);
}

}  // namespace codemode::isolate
