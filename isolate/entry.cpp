// The sandbox process's entry: the addon that node's pinned binary loads (channel/
// process_contract.h has the command line). node has started V8, its platform and its threads;
// the addon checks that this node is the one it was built against, takes node's main thread for
// good and runs the sandbox process (child.h) on it. It never returns to node: after the
// lockdown, node's event loop would meet refused system calls, so the process leaves with
// _exit().
#include <node.h>
#include <unistd.h>

#include <string>

#include "channel/process_contract.h"
#include "isolate/addon.h"
#include "isolate/child.h"

// The shipped addon: the sandbox process, with no test hooks.
NODE_MODULE_INIT(/* exports, module, context */) {
  using namespace codemode;
  if (!isolate::attach_to_node(context)) ::_exit(channel::kExitWrongEngine);
  isolate::ChildOptions options;
  for (const std::string& argument : isolate::addon_arguments(context)) {
    if (auto namespaces = channel::parse_namespaces_argument(argument)) {
      options.namespaces = *namespaces;
    }
  }
  ::_exit(isolate::child_main(options));
}
