# workerd peer for bench/compare. The socket address comes from the command line
# (--socket-addr http=127.0.0.1:PORT); bench/compare copies this file, parent.js and the
# synthetic spec.json into one directory and runs `workerd serve --experimental config.capnp`
# (the Worker Loader binding is experimental: workerd refuses it without --experimental).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .parent) ],
  sockets = [ (name = "http", http = (), service = "main") ],
);

const parent :Workerd.Worker = (
  modules = [ (name = "parent.js", esModule = embed "parent.js") ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "SPEC", text = embed "spec.json"),
  ],
);
